//! Azure's public regions: ARM takes a location's name or display name in
//! any case and spacing (`East US`, `eastus`) and refuses one it does not
//! know before anything is created.

use crate::error::Error;

/// The public cloud's regions, by name.
pub const REGIONS: &[&str] = &[
    "australiacentral",
    "australiacentral2",
    "australiaeast",
    "australiasoutheast",
    "austriaeast",
    "belgiumcentral",
    "brazilsouth",
    "brazilsoutheast",
    "canadacentral",
    "canadaeast",
    "centralindia",
    "centralus",
    "centraluseuap",
    "chilecentral",
    "eastasia",
    "eastus",
    "eastus2",
    "eastus2euap",
    "francecentral",
    "francesouth",
    "germanynorth",
    "germanywestcentral",
    "indonesiacentral",
    "israelcentral",
    "italynorth",
    "japaneast",
    "japanwest",
    "jioindiacentral",
    "jioindiawest",
    "koreacentral",
    "koreasouth",
    "malaysiawest",
    "mexicocentral",
    "newzealandnorth",
    "northcentralus",
    "northeurope",
    "norwayeast",
    "norwaywest",
    "polandcentral",
    "qatarcentral",
    "southafricanorth",
    "southafricawest",
    "southcentralus",
    "southeastasia",
    "southindia",
    "spaincentral",
    "swedencentral",
    "switzerlandnorth",
    "switzerlandwest",
    "uaecentral",
    "uaenorth",
    "uksouth",
    "ukwest",
    "westcentralus",
    "westeurope",
    "westindia",
    "westus",
    "westus2",
    "westus3",
];

/// A location's region name (`East US` → `eastus`), if Azure has it.
pub fn region(location: &str) -> Option<&'static str> {
    let name = location.replace(' ', "").to_ascii_lowercase();
    REGIONS.iter().copied().find(|r| *r == name)
}

/// The region of a managed cluster's or agent pool's `location`.
pub fn for_resource(location: &str, resource_type: &str) -> Result<&'static str, Error> {
    region(location).ok_or_else(|| Error::LocationNotAvailableForResourceType {
        location: location.to_owned(),
        resource_type: resource_type.to_owned(),
    })
}

/// The region of a resource group's `location`.
pub fn for_group(location: &str) -> Result<&'static str, Error> {
    region(location).ok_or_else(|| Error::LocationNotAvailableForResourceGroup(location.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_display_names_are_regions() {
        assert_eq!(region("East US"), Some("eastus"));
        assert_eq!(region("westeurope"), Some("westeurope"));
        assert_eq!(region("WestUS2"), Some("westus2"));
        assert_eq!(region("mars"), None);
        assert_eq!(region("\u{0}"), None);
        let err = for_group("mars").unwrap_err().to_string();
        assert!(
            err.starts_with("The provided location 'mars' is not available for resource group. List of available regions is 'australiacentral,"),
            "{err}"
        );
    }
}
