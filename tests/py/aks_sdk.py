"""azure-mgmt-containerservice + azure-identity drive kemu's AKS facade.

Run by tests/aks_sdk.rs with KEMU_ARM (the facade's https URL), KEMU_TENANT,
KEMU_SUBSCRIPTION and KEMU_OUT (a directory) set, and REQUESTS_CA_BUNDLE
pointing at kemu's CA. Writes the user kubeconfig to $KEMU_OUT/sdk.kubeconfig,
runs kubectl with it, and prints one JSON summary line; any failed expectation raises.
"""

import base64
import json
import os
import subprocess
import time

from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.identity import ClientSecretCredential
from azure.mgmt.containerservice import ContainerServiceClient
from azure.mgmt.containerservice.models import (
    AgentPool,
    ManagedCluster,
    ManagedClusterAgentPoolProfile,
    ManagedClusterIdentity,
    PowerState,
)
from azure.mgmt.resource import ResourceManagementClient

ARM = os.environ["KEMU_ARM"]
TENANT = os.environ["KEMU_TENANT"]
SUB = os.environ["KEMU_SUBSCRIPTION"]
OUT = os.environ["KEMU_OUT"]
SCOPE = "https://management.core.windows.net/.default"


def claims(token):
    payload = token.split(".")[1]
    payload += "=" * (-len(payload) % 4)
    return json.loads(base64.urlsafe_b64decode(payload))


def main():
    cred = ClientSecretCredential(
        TENANT, "sdk-app", "sdk-secret", authority=ARM, disable_instance_discovery=True
    )
    token = cred.get_token(SCOPE)
    c = claims(token.token)
    assert c["aud"] == "https://management.core.windows.net/", c
    assert c["tid"] == TENANT and c["appid"] == "sdk-app" and c["oid"], c
    assert c["exp"] == token.expires_on, (c, token.expires_on)
    assert abs(c["exp"] - time.time()) < 4000, c

    kw = dict(base_url=ARM, credential_scopes=[SCOPE])
    resources = ResourceManagementClient(cred, SUB, **kw)
    aks = ContainerServiceClient(cred, SUB, **kw)

    rg = resources.resource_groups.create_or_update("sdk-rg", {"location": "westeurope"})
    assert rg.name == "sdk-rg" and rg.location == "westeurope"
    assert resources.resource_groups.check_existence("sdk-rg")
    assert not resources.resource_groups.check_existence("no-such-rg")

    try:
        aks.managed_clusters.get("sdk-rg", "c1")
        raise AssertionError("get before create succeeded")
    except ResourceNotFoundError as e:
        assert e.error.code == "ResourceNotFound", e.error.code

    cluster = ManagedCluster(
        location="westeurope",
        dns_prefix="sdkc1",
        kubernetes_version="1.33",
        identity=ManagedClusterIdentity(type="SystemAssigned"),
        agent_pool_profiles=[
            ManagedClusterAgentPoolProfile(
                name="system", count=2, vm_size="Standard_D4s_v5", mode="System"
            )
        ],
        tags={"env": "test"},
    )
    poller = aks.managed_clusters.begin_create_or_update("sdk-rg", "c1", cluster)
    mc = poller.result()
    assert mc.provisioning_state == "Succeeded", mc.provisioning_state
    assert mc.current_kubernetes_version == "1.33.5", mc.current_kubernetes_version
    assert mc.power_state.code == "Running"
    assert mc.identity.principal_id
    assert mc.tags == {"env": "test"}
    assert mc.agent_pool_profiles[0].vm_size == "Standard_D4s_v5"

    # Creating a cluster in a missing resource group is refused.
    try:
        aks.managed_clusters.begin_create_or_update("no-such-rg", "c9", cluster).result()
        raise AssertionError("create in a missing group succeeded")
    except HttpResponseError as e:
        assert e.error.code == "ResourceGroupNotFound", e.error.code

    # Bad input: an unsupported version changes nothing.
    bad = ManagedCluster(
        location="westeurope",
        kubernetes_version="1.20",
        agent_pool_profiles=[ManagedClusterAgentPoolProfile(name="p", count=1, mode="System")],
    )
    try:
        aks.managed_clusters.begin_create_or_update("sdk-rg", "c2", bad).result()
        raise AssertionError("unsupported version accepted")
    except HttpResponseError as e:
        assert e.error.code == "K8sVersionNotSupported", e.error.code
    assert [m.name for m in aks.managed_clusters.list_by_resource_group("sdk-rg")] == ["c1"]
    assert [m.name for m in aks.managed_clusters.list() if "/sdk-rg/" in m.id.lower()] == ["c1"]

    # Scale through the cluster PUT.
    mc.agent_pool_profiles[0].count = 3
    mc = aks.managed_clusters.begin_create_or_update("sdk-rg", "c1", mc).result()
    assert mc.agent_pool_profiles[0].count == 3

    # A second pool through the agentPools child resource.
    pool = aks.agent_pools.begin_create_or_update(
        "sdk-rg", "c1", "user1", AgentPool(count=1, vm_size="Standard_D2s_v5", mode="User")
    ).result()
    assert pool.provisioning_state == "Succeeded" and pool.count == 1
    names = sorted(p.name for p in aks.agent_pools.list("sdk-rg", "c1"))
    assert names == ["system", "user1"], names
    mc = aks.managed_clusters.get("sdk-rg", "c1")
    assert sorted(p.name for p in mc.agent_pool_profiles) == ["system", "user1"]
    # A pool stops and starts on its own (az aks nodepool stop/start).
    pool.power_state = PowerState(code="Stopped")
    stopped = aks.agent_pools.begin_create_or_update("sdk-rg", "c1", "user1", pool).result()
    assert stopped.power_state.code == "Stopped", stopped.power_state
    assert aks.managed_clusters.get("sdk-rg", "c1").power_state.code == "Running"
    pool.power_state = PowerState(code="Running")
    started = aks.agent_pools.begin_create_or_update("sdk-rg", "c1", "user1", pool).result()
    assert started.power_state.code == "Running"
    aks.agent_pools.begin_delete("sdk-rg", "c1", "user1").result()
    assert [p.name for p in aks.agent_pools.list("sdk-rg", "c1")] == ["system"]

    profile = aks.managed_clusters.get_upgrade_profile("sdk-rg", "c1")
    upgrades = [u.kubernetes_version for u in profile.control_plane_profile.upgrades]
    assert upgrades == ["1.34.1"], upgrades
    mc.kubernetes_version = "1.34"
    for p in mc.agent_pool_profiles:
        p.orchestrator_version = "1.34"
    mc = aks.managed_clusters.begin_create_or_update("sdk-rg", "c1", mc).result()
    assert mc.current_kubernetes_version == "1.34.1"

    user = aks.managed_clusters.list_cluster_user_credentials("sdk-rg", "c1")
    assert user.kubeconfigs[0].name == "clusterUser"
    kubeconfig = os.path.join(OUT, "sdk.kubeconfig")
    with open(kubeconfig, "wb") as f:
        f.write(user.kubeconfigs[0].value)
    # kubectl reaches the cluster with the credential the SDK returned.
    version = subprocess.run(
        ["kubectl", "--kubeconfig", kubeconfig, "get", "--raw", "/version"],
        capture_output=True, text=True, timeout=60,
    )
    assert version.returncode == 0, version.stderr
    assert json.loads(version.stdout)["major"] == "1", version.stdout
    admin = aks.managed_clusters.list_cluster_admin_credentials("sdk-rg", "c1")
    assert admin.kubeconfigs[0].name == "clusterAdmin"

    aks.managed_clusters.begin_stop("sdk-rg", "c1").result()
    assert aks.managed_clusters.get("sdk-rg", "c1").power_state.code == "Stopped"
    aks.managed_clusters.begin_start("sdk-rg", "c1").result()
    assert aks.managed_clusters.get("sdk-rg", "c1").power_state.code == "Running"

    aks.managed_clusters.begin_delete("sdk-rg", "c1").result()
    try:
        aks.managed_clusters.get("sdk-rg", "c1")
        raise AssertionError("cluster still there after delete")
    except ResourceNotFoundError:
        pass
    resources.resource_groups.begin_delete("sdk-rg").result()
    assert not resources.resource_groups.check_existence("sdk-rg")
    print(json.dumps({"ok": True, "oid": c["oid"]}))


if __name__ == "__main__":
    main()
