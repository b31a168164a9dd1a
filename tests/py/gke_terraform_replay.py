"""Replays the GKE call sequences of terraform-provider-google's
google_container_cluster (with remove_default_node_pool) and
google_container_node_pool, as read from the provider's source
(resource_container_cluster.go, resource_container_node_pool.go,
container_operation.go), with the Python client and, for compute's
instanceGroupManagers.get that node_count comes from, plain HTTP.

Usage: gke_terraform_replay.py GKE_URL PROJECT TOKEN
"""

import re
import sys

import requests
from google.api_core import exceptions
from google.api_core.client_options import ClientOptions
from google.cloud import container_v1 as gke
from google.oauth2.credentials import Credentials

url, project, token = sys.argv[1], sys.argv[2], sys.argv[3]
client = gke.ClusterManagerClient(
    credentials=Credentials(token=token), transport="rest", client_options=ClientOptions(api_endpoint=url)
)
compute = f"{url}/compute/v1/"  # the provider's compute_custom_endpoint
location = "us-central1"
parent = f"projects/{project}/locations/{location}"
cluster_name = f"{parent}/clusters/tf1"
# terraform's regexp for instanceGroupUrls
IGM_URL = re.compile(
    r"projects/([a-z][a-z0-9-]{5}(?:[-a-z0-9]{0,23}[a-z0-9])?)/zones/([a-z0-9-]*)/instanceGroupManagers/([^/]*)"
)


def operation_wait(op):
    """ContainerOperationWait: pending PENDING/RUNNING, target DONE; a
    statusMessage is an error."""
    for _ in range(3):
        if op.status == gke.Operation.Status.DONE:
            assert not op.status_message, op.status_message
            return op
        op = client.get_operation(name=f"{parent}/operations/{op.name}")
    raise AssertionError(f"operation {op.name} never DONE")


def cluster_resting_state():
    """containerClusterAwaitRestingState: RUNNING is ready, ERROR/DEGRADED fail."""
    for _ in range(3):
        c = client.get_cluster(name=cluster_name)
        if c.status == gke.Cluster.Status.RUNNING:
            return c
        assert c.status not in (gke.Cluster.Status.ERROR, gke.Cluster.Status.DEGRADED), c.status
    raise AssertionError("cluster never reached RUNNING")


def node_pool_resting_state(name):
    for _ in range(3):
        np = client.get_node_pool(name=f"{cluster_name}/nodePools/{name}")
        if np.status == gke.NodePool.Status.RUNNING:
            return np
        assert np.status != gke.NodePool.Status.ERROR, np.status
    raise AssertionError("node pool never reached RUNNING")


def node_count(np):
    """flattenNodePool: the average targetSize of the pool's managers."""
    size, urls = 0, 0
    for igm_url in np.instance_group_urls:
        m = IGM_URL.search(igm_url)
        assert m, igm_url
        r = requests.get(
            f"{compute}projects/{m[1]}/zones/{m[2]}/instanceGroupManagers/{m[3]}",
            params={"alt": "json", "prettyPrint": "false"},
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        )
        assert r.status_code == 200, r.text
        igm = r.json()
        assert igm["instanceGroup"], igm
        size += int(igm["targetSize"])
        urls += 1
    return size // urls if urls else 0


# --- google_container_cluster "tf1", remove_default_node_pool = true ---
op = client.create_cluster(parent=parent, cluster=gke.Cluster(
    name="tf1",
    initial_node_count=1,
    node_config=gke.NodeConfig(machine_type="e2-medium", oauth_scopes=["https://www.googleapis.com/auth/cloud-platform"]),
    master_authorized_networks_config=gke.MasterAuthorizedNetworksConfig(
        enabled=True, cidr_blocks=[gke.MasterAuthorizedNetworksConfig.CidrBlock(cidr_block="10.0.0.0/8")]),
    private_cluster_config=gke.PrivateClusterConfig(enable_private_nodes=True, master_ipv4_cidr_block="172.16.0.0/28"),
    resource_labels={"managed-by": "terraform"},
))
operation_wait(op)
cluster_resting_state()
# remove_default_node_pool: the hard-coded name, then wait.
operation_wait(client.delete_node_pool(name=f"{cluster_name}/nodePools/default-pool"))
c = cluster_resting_state()
# Read: what the provider stores.
assert c.location == location and len(c.locations) == 3
assert c.endpoint and c.master_auth.cluster_ca_certificate and c.self_link
assert c.current_master_version and c.services_ipv4_cidr and c.label_fingerprint
assert list(c.node_pools) == [], c.node_pools
assert c.master_authorized_networks_config.cidr_blocks[0].cidr_block == "10.0.0.0/8"
ip = c.control_plane_endpoints_config.ip_endpoints_config
assert ip.enabled and ip.authorized_networks_config.cidr_blocks[0].cidr_block == "10.0.0.0/8"
assert c.private_cluster_config.enable_private_nodes and c.network_config.default_enable_private_nodes

# --- google_container_node_pool "np1", node_count = 2, autoscaling 1..4 ---
cluster_resting_state()
op = client.create_node_pool(parent=cluster_name, node_pool=gke.NodePool(
    name="np1",
    initial_node_count=2,
    config=gke.NodeConfig(machine_type="e2-standard-4", labels={"pool": "np1"}),
    management=gke.NodeManagement(auto_repair=True, auto_upgrade=True),
    autoscaling=gke.NodePoolAutoscaling(enabled=True, min_node_count=1, max_node_count=4),
))
operation_wait(op)
np = node_pool_resting_state("np1")
assert node_count(np) == 2, "plan after apply would show a node_count diff"
assert len(np.instance_group_urls) == 3
assert np.autoscaling.enabled and np.autoscaling.max_node_count == 4

# A second read (the refresh of a plan after apply) sees the same.
assert node_count(client.get_node_pool(name=f"{cluster_name}/nodePools/np1")) == 2

# node_count 2 -> 3: setSize, wait, read.
node_pool_resting_state("np1")
operation_wait(client.set_node_pool_size(request={"name": f"{cluster_name}/nodePools/np1", "node_count": 3}))
assert node_count(node_pool_resting_state("np1")) == 3
assert cluster_resting_state().current_node_count == 9

# autoscaling change goes through clusters.update.
operation_wait(client.update_cluster(name=cluster_name, update=gke.ClusterUpdate(
    desired_node_pool_id="np1",
    desired_node_pool_autoscaling=gke.NodePoolAutoscaling(enabled=True, min_node_count=2, max_node_count=6))))
operation_wait(client.set_node_pool_management(request={
    "name": f"{cluster_name}/nodePools/np1", "management": {"auto_repair": False, "auto_upgrade": True}}))
np = node_pool_resting_state("np1")
assert np.autoscaling.max_node_count == 6 and not np.management.auto_repair

# destroy: node pool, then cluster; a read after each is a 404 (removed from state).
node_pool_resting_state("np1")
operation_wait(client.delete_node_pool(name=f"{cluster_name}/nodePools/np1"))
try:
    client.get_node_pool(name=f"{cluster_name}/nodePools/np1")
    raise AssertionError("deleted pool still readable")
except exceptions.NotFound:
    pass
r = requests.get(
    f"{compute}projects/{project}/zones/us-central1-a/instanceGroupManagers",
    headers={"Authorization": f"Bearer {token}"}, timeout=10)
assert r.json()["items"] == [], r.text
cluster_resting_state()
operation_wait(client.delete_cluster(name=cluster_name))
try:
    client.get_cluster(name=cluster_name)
    raise AssertionError("deleted cluster still readable")
except exceptions.NotFound:
    pass
print("ok: terraform call sequences replayed")
