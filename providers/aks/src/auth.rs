//! Bearer tokens for AKS clusters' API servers, as AKS-managed Azure AD
//! checks them: an access token minted by kemu's token endpoint for the AKS
//! server application, not expired on the clock. The caller is the token's
//! object id, as AKS names service principals.

use std::sync::Arc;

use kemu_shared::{ClusterRecord, SharedClock, TokenAuthenticator, UserInfo};

use crate::identity;
use crate::state::State;

/// The application id of the AKS Azure AD server: the audience of tokens for
/// AKS API servers (what `kubelogin` asks for).
pub const AKS_SERVER_APP_ID: &str = "6dae42f8-4368-4678-94ff-3960e28e3630";

/// Checks AKS bearer tokens for the data plane; registered for `Cloud::Aks`.
#[derive(Debug, Clone)]
pub struct AksTokenAuthenticator {
    pub(crate) state: Arc<State>,
    pub(crate) clock: SharedClock,
}

impl TokenAuthenticator for AksTokenAuthenticator {
    fn authenticate(
        &self,
        _cluster: &ClusterRecord,
        token: &str,
    ) -> Result<Option<UserInfo>, String> {
        let Some(claims) = identity::claims(token) else {
            return Ok(None);
        };
        let minted = claims["uti"]
            .as_str()
            .is_some_and(|uti| self.state.issued.lock().contains(uti));
        if !minted {
            return Ok(None);
        }
        if claims["aud"] != AKS_SERVER_APP_ID {
            return Err(format!(
                "token audience {} is not the AKS server application {AKS_SERVER_APP_ID}",
                claims["aud"]
            ));
        }
        let exp = claims["exp"].as_i64().unwrap_or(0);
        if exp <= self.clock.now().timestamp() {
            return Err("token has expired".into());
        }
        let oid = claims["oid"].as_str().unwrap_or_default().to_owned();
        // (Azure RBAC grants are read through `access_config`.)
        Ok(Some(UserInfo {
            username: oid.clone(),
            uid: oid,
            groups: vec!["system:authenticated".into()],
            extra: Default::default(),
        }))
    }

    /// The Azure role assignments, for Azure RBAC in the data plane.
    fn access_config(&self, cluster: &ClusterRecord) -> serde_json::Value {
        let aad = cluster.extra.pointer("/properties/aadProfile");
        let azure_rbac = aad.is_some_and(|p| {
            p.get("enableAzureRBAC")
                .or_else(|| p.get("enableAzureRbac"))
                == Some(&serde_json::Value::Bool(true))
        });
        let all: Vec<serde_json::Value> = self
            .state
            .role_assignments
            .lock()
            .values()
            .cloned()
            .collect();
        serde_json::json!({
            "azureRbac": azure_rbac,
            "clusterId": crate::render::resource_id(cluster),
            "roleAssignments": crate::authorization::assignments_for_dataplane(&all),
        })
    }
}
