//! The settings each cloud CLI needs to talk to a running kemu, as shell
//! lines: what `kemu env aws|gcloud|az` prints (`eval "$(kemu env aws)"`)
//! and the start-up hint repeats.
//!
//! - aws: the EKS endpoint (also STS's, which kemu answers), the dummy keys kemu accepts (`test`) and
//!   a region.
//! - gcloud: a project, an access token, the container, Service Usage and
//!   Compute endpoint overrides, no prompts or update checks.
//! - az: kemu's CA bundle, no instance discovery, and the commands that
//!   register kemu as a cloud and log in (any service principal kemu
//!   accepts: `AZURE_CLIENT_ID` / `AZURE_CLIENT_SECRET` when set).

use crate::server::ReadyLine;

/// The CLIs `kemu env` knows.
pub const CLIS: [&str; 3] = ["aws", "gcloud", "az"];

/// A value quoted for a POSIX shell.
fn quote(v: &str) -> String {
    if !v.is_empty()
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@,+".contains(&b))
    {
        v.to_owned()
    } else {
        format!("'{}'", v.replace('\'', r"'\''"))
    }
}

fn export(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("export {k}={}\n", quote(v)))
        .collect()
}

/// The lines for `cli`, or `None` for a CLI kemu does not know.
pub fn lines(cli: &str, ready: &ReadyLine) -> Option<String> {
    let gke = format!("{}/", ready.gke);
    Some(match cli {
        "aws" => export(&[
            ("AWS_ENDPOINT_URL_EKS", &ready.eks),
            ("AWS_ENDPOINT_URL_STS", &ready.eks),
            ("AWS_ACCESS_KEY_ID", "test"),
            ("AWS_SECRET_ACCESS_KEY", "test"),
            ("AWS_REGION", "us-east-1"),
            ("AWS_DEFAULT_REGION", "us-east-1"),
        ]),
        "gcloud" => export(&[
            ("CLOUDSDK_CORE_PROJECT", "kemu-project"),
            ("CLOUDSDK_AUTH_ACCESS_TOKEN", "kemu-token"),
            ("CLOUDSDK_API_ENDPOINT_OVERRIDES_CONTAINER", &gke),
            ("CLOUDSDK_API_ENDPOINT_OVERRIDES_SERVICEUSAGE", &gke),
            ("CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE", &gke),
            ("CLOUDSDK_CORE_DISABLE_PROMPTS", "1"),
            ("CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK", "true"),
            ("CLOUDSDK_CORE_CHECK_GCE_METADATA", "false"),
        ]),
        "az" => {
            let mut out = export(&[
                ("REQUESTS_CA_BUNDLE", &ready.ca_bundle),
                ("AZURE_CORE_INSTANCE_DISCOVERY", "false"),
            ]);
            out.push_str(&format!(
                "az cloud register -n kemu --endpoint-resource-manager {0}/ >/dev/null 2>&1 || az cloud update -n kemu --endpoint-resource-manager {0}/\n\
                 az cloud set -n kemu\n\
                 az login --service-principal -u \"${{AZURE_CLIENT_ID:-kemu}}\" -p \"${{AZURE_CLIENT_SECRET:-kemu}}\" --tenant {1} >/dev/null\n",
                quote(&ready.aks),
                kemu_aks::state::DEFAULT_TENANT
            ));
            out
        }
        _ => return None,
    })
}

/// The start-up hint: how to point each CLI at this kemu.
pub fn hint(ready: &ReadyLine) -> String {
    let mut out = String::from("kemu is ready. Point a CLI at it with these lines");
    if !ready.admin.is_empty() {
        out.push_str(&format!(
            " (or eval \"$(kemu env CLI --admin {})\")",
            ready.admin
        ));
    }
    out.push_str(":\n");
    for cli in CLIS {
        out.push_str(&format!("# {cli}\n"));
        out.push_str(&lines(cli, ready).unwrap_or_default());
    }
    out
}
