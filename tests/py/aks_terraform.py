"""Replays the call sequences of terraform's azurerm provider for
azurerm_kubernetes_cluster and azurerm_kubernetes_cluster_node_pool with the
Python SDK, at the api-versions the provider pins (2025-10-01, and 2026-04-01
for some calls). terraform itself cannot run here: the provider binary is not
on the machine.

Sequence read from the provider's source (see the AKS notes): metadata_host
discovery; a client-credentials token for Microsoft Graph whose JWT claims
(appid, oid, tid) the provider parses; per resource a Create (existence GET
expecting 404, PUT, poll, Read), Read on every refresh (GET, the user
credential whose kubeconfig it parses, three maintenance configurations whose
404 it ignores), Update (GET then PUT of the whole model) and Delete.

Env: KEMU_ARM, KEMU_TENANT, KEMU_SUBSCRIPTION; REQUESTS_CA_BUNDLE = kemu's CA.
"""

import base64
import json
import os

import requests
import yaml
from azure.core.exceptions import ResourceNotFoundError
from azure.identity import ClientSecretCredential
from azure.mgmt.containerservice import ContainerServiceClient
from azure.mgmt.containerservice.models import (
    AgentPool,
    ManagedCluster,
    ManagedClusterAgentPoolProfile,
    ManagedClusterIdentity,
)
from azure.mgmt.resource import ResourceManagementClient

ARM = os.environ["KEMU_ARM"]
TENANT = os.environ["KEMU_TENANT"]
SUB = os.environ["KEMU_SUBSCRIPTION"]
RG, NAME = "tf-rg", "tfaks"
MAINTENANCE = ["default", "aksManagedAutoUpgradeSchedule", "aksManagedNodeOSUpgradeSchedule"]


def claims(token):
    payload = token.split(".")[1]
    payload += "=" * (-len(payload) % 4)
    return json.loads(base64.urlsafe_b64decode(payload))


def environment():
    """go-azure-sdk environments/from_endpoint.go: these must be non-empty."""
    host = ARM.split("://", 1)[1]
    meta = requests.get(f"https://{host}/metadata/endpoints?api-version=2022-09-01").json()
    assert isinstance(meta, dict), meta
    for key in ("name", "resourceManager", "microsoftGraphResourceId"):
        assert meta[key], key
    return meta


def graph_token(meta):
    """auth/client_credentials.go: no OIDC discovery, v2 token URL."""
    login = meta["authentication"]["loginEndpoint"].rstrip("/")
    resp = requests.post(
        f"{login}/{TENANT}/oauth2/v2.0/token",
        data={
            "grant_type": "client_credentials",
            "client_id": "tf-app",
            "client_secret": "tf-secret",
            "scope": meta["microsoftGraphResourceId"].rstrip("/") + "/.default",
        },
    )
    assert resp.status_code == 200, resp.text
    body = resp.json()
    int(body["expires_in"])
    c = claims(body["access_token"])
    assert c["appid"] == "tf-app" and c["tid"] == TENANT and c["oid"], c
    assert c["aud"] == "https://graph.microsoft.com/", c
    return c["oid"]


def parse_kube_config(raw):
    """kubernetes/kube_config.go: server, and a token or a client cert+key."""
    text = raw.decode()
    assert "exec" not in text and "apiserver-id:" not in text
    doc = yaml.safe_load(text)
    assert doc["clusters"][0]["cluster"]["server"]
    user = doc["users"][0]["user"]
    assert user.get("token") or (user["client-certificate-data"] and user["client-key-data"])
    return doc


def read_cluster(aks):
    """Read, run after every apply and on every refresh."""
    mc = aks.managed_clusters.get(RG, NAME)
    creds = aks.managed_clusters.list_cluster_user_credentials(RG, NAME)
    entry = [k for k in creds.kubeconfigs if k.name == "clusterUser"]
    assert entry, [k.name for k in creds.kubeconfigs]
    parse_kube_config(entry[0].value)
    for config in MAINTENANCE:
        try:
            aks.maintenance_configurations.get(RG, NAME, config)
            raise AssertionError(f"maintenance configuration {config} exists")
        except ResourceNotFoundError:
            pass
    return mc


def main():
    meta = environment()
    graph_token(meta)
    cred = ClientSecretCredential(
        TENANT, "tf-app", "tf-secret", authority=ARM, disable_instance_discovery=True
    )
    kw = dict(base_url=ARM, credential_scopes=["https://management.core.windows.net/.default"])
    resources = ResourceManagementClient(cred, SUB, **kw)
    aks = ContainerServiceClient(cred, SUB, api_version="2025-10-01", **kw)
    aks_new = ContainerServiceClient(cred, SUB, api_version="2026-04-01", **kw)

    # Provider registrations (v4 releases register a legacy list): list, then
    # register what is missing and read it back.
    registered = {p.namespace for p in resources.providers.list() if p.registration_state == "Registered"}
    assert "Microsoft.ContainerService" in registered, registered
    assert resources.providers.register("Microsoft.Kusto").registration_state == "Registered"
    assert resources.providers.get("Microsoft.Kusto").registration_state == "Registered"

    # azurerm_resource_group
    assert not resources.resource_groups.check_existence(RG)
    resources.resource_groups.create_or_update(RG, {"location": "eastus"})

    # azurerm_kubernetes_cluster: Create
    try:
        aks.managed_clusters.get(RG, NAME)
        raise AssertionError("exists before create")
    except ResourceNotFoundError:
        pass
    model = ManagedCluster(
        location="eastus",
        dns_prefix="tfaks",
        kubernetes_version="1.33",
        identity=ManagedClusterIdentity(type="SystemAssigned"),
        agent_pool_profiles=[
            ManagedClusterAgentPoolProfile(
                name="default", count=1, vm_size="Standard_D2_v2", mode="System",
                type="VirtualMachineScaleSets", os_type="Linux",
            )
        ],
        tags={"managed-by": "terraform"},
    )
    aks.managed_clusters.begin_create_or_update(RG, NAME, model).result()
    mc = read_cluster(aks)
    assert mc.provisioning_state == "Succeeded"
    # A refresh reads the credentials again.
    read_cluster(aks)

    # azurerm_kubernetes_cluster_node_pool: Create (parent GET, existence GET, PUT, Read)
    parent = aks_new.managed_clusters.get(RG, NAME)
    assert parent.agent_pool_profiles[0].type == "VirtualMachineScaleSets"
    try:
        aks.agent_pools.get(RG, NAME, "internal")
        raise AssertionError("node pool exists before create")
    except ResourceNotFoundError:
        pass
    pool = AgentPool(count=2, vm_size="Standard_D2_v2", mode="User", os_type="Linux",
                     node_labels={"tier": "internal"}, orchestrator_version="1.33")
    aks.agent_pools.begin_create_or_update(RG, NAME, "internal", pool).result()
    got = aks.agent_pools.get(RG, NAME, "internal")
    assert got.count == 2 and got.node_labels == {"tier": "internal"}, got
    # Update: GET, change, PUT.
    got.count = 3
    aks.agent_pools.begin_create_or_update(RG, NAME, "internal", got).result()
    assert aks.agent_pools.get(RG, NAME, "internal").count == 3

    # azurerm_kubernetes_cluster: Update (GET, change, PUT of the whole model)
    mc = aks.managed_clusters.get(RG, NAME)
    mc.tags = {"managed-by": "terraform", "env": "ci"}
    mc.agent_pool_profiles = [p for p in mc.agent_pool_profiles if p.name == "default"]
    mc.agent_pool_profiles[0].count = 2
    aks.managed_clusters.begin_create_or_update(RG, NAME, mc).result()
    mc = read_cluster(aks)
    assert mc.tags == {"managed-by": "terraform", "env": "ci"}
    counts = {p.name: p.count for p in mc.agent_pool_profiles}
    assert counts == {"default": 2, "internal": 3}, counts

    # Destroy: node pool, cluster, group.
    aks.agent_pools.begin_delete(RG, NAME, "internal").result()
    aks.managed_clusters.begin_delete(RG, NAME).result()
    try:
        aks.managed_clusters.get(RG, NAME)
        raise AssertionError("cluster exists after destroy")
    except ResourceNotFoundError:
        pass
    resources.resource_groups.begin_delete(RG).result()
    print(json.dumps({"ok": True}))


if __name__ == "__main__":
    main()
