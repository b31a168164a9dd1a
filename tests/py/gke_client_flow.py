"""google-cloud-container (REST transport) against kemu's GKE facade.

Usage: gke_client_flow.py GKE_URL PROJECT TOKEN

Drives clusters, node pools and operations through ClusterManagerClient with
both `name=`/`parent=` paths and the legacy flattened (zone-style) arguments,
and checks the errors the API raises. Exits non-zero on the first failure.
"""

import sys

import google.auth.exceptions
import requests

from google.api_core import exceptions
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import container_v1 as gke
from google.oauth2.credentials import Credentials

url, project, token = sys.argv[1], sys.argv[2], sys.argv[3]
options = ClientOptions(api_endpoint=url)
client = gke.ClusterManagerClient(
    credentials=Credentials(token=token), transport="rest", client_options=options
)
zone = "us-central1-a"
parent = f"projects/{project}/locations/{zone}"
name = f"{parent}/clusters/py1"
polls = []


def wait(op, legacy=False):
    """Polls an operation as the docs show; returns it DONE."""
    n = 0
    while op.status != gke.Operation.Status.DONE:
        n += 1
        assert n <= 1, f"operation {op.name} not DONE on its first get"
        if legacy:
            op = client.get_operation(project_id=project, zone=zone, operation_id=op.name)
        else:
            op = client.get_operation(name=f"{parent}/operations/{op.name}")
    polls.append(n)
    assert not op.status_message, op.status_message
    return op


# create, with request enums the client sends as integers
op = client.create_cluster(
    parent=parent,
    cluster=gke.Cluster(
        name="py1",
        node_pools=[gke.NodePool(name="default-pool", initial_node_count=2)],
        release_channel=gke.ReleaseChannel(channel=gke.ReleaseChannel.Channel.STABLE),
        resource_labels={"team": "a"},
        workload_identity_config=gke.WorkloadIdentityConfig(workload_pool=f"{project}.svc.id.goog"),
    ),
)
assert op.operation_type == gke.Operation.Type.CREATE_CLUSTER, op
op = wait(op)
assert op.end_time, op

c = client.get_cluster(name=name)
assert c.status == gke.Cluster.Status.RUNNING, c.status
assert c.release_channel.channel == gke.ReleaseChannel.Channel.STABLE, c.release_channel
assert c.workload_identity_config.workload_pool == f"{project}.svc.id.goog"
assert c.current_node_count == 2, c.current_node_count
assert c.endpoint and c.master_auth.cluster_ca_certificate
assert c.resource_labels["team"] == "a"
assert c.node_pools[0].status == gke.NodePool.Status.RUNNING
assert len(c.instance_group_urls) == 1, c.instance_group_urls

# aggregated and legacy lists
assert [x.name for x in client.list_clusters(parent=f"projects/{project}/locations/-").clusters] == ["py1"]
assert [x.name for x in client.list_clusters(project_id=project, zone="-").clusters] == ["py1"]
legacy = client.get_cluster(project_id=project, zone=zone, cluster_id="py1")
assert legacy.name == "py1" and legacy.zone == zone

# legacy setSize and operations polling through zones/Z/operations
op = client.set_node_pool_size(request={
    "project_id": project, "zone": zone, "cluster_id": "py1", "node_pool_id": "default-pool", "node_count": 3,
})
assert op.operation_type == gke.Operation.Type.SET_NODE_POOL_SIZE
wait(op, legacy=True)
assert client.get_cluster(name=name).current_node_count == 3

# node pools
op = client.create_node_pool(
    parent=name,
    node_pool=gke.NodePool(
        name="np2",
        initial_node_count=1,
        config=gke.NodeConfig(
            machine_type="n2-standard-2",
            labels={"x": "y"},
            taints=[gke.NodeTaint(key="k", value="v", effect=gke.NodeTaint.Effect.NO_SCHEDULE)],
        ),
    ),
)
wait(op)
np = client.get_node_pool(name=f"{name}/nodePools/np2")
assert np.config.machine_type == "n2-standard-2" and np.config.labels["x"] == "y"
assert np.config.taints[0].effect == gke.NodeTaint.Effect.NO_SCHEDULE
assert [p.name for p in client.list_node_pools(parent=name).node_pools] == ["default-pool", "np2"]
wait(client.set_node_pool_autoscaling(request=gke.SetNodePoolAutoscalingRequest(
    name=f"{name}/nodePools/np2",
    autoscaling=gke.NodePoolAutoscaling(enabled=True, min_node_count=1, max_node_count=5),
)))
wait(client.set_node_pool_management(request=gke.SetNodePoolManagementRequest(
    name=f"{name}/nodePools/np2", management=gke.NodeManagement(auto_repair=False, auto_upgrade=True)
)))
wait(client.update_node_pool(request=gke.UpdateNodePoolRequest(
    name=f"{name}/nodePools/np2", node_version="1.33", image_type="COS_CONTAINERD",
    labels=gke.NodeLabels(labels={"x": "z"}),
)))
np = client.get_node_pool(name=f"{name}/nodePools/np2")
assert np.autoscaling.enabled and np.autoscaling.max_node_count == 5
assert not np.management.auto_repair
assert np.version.startswith("1.33."), np.version
assert np.config.labels["x"] == "z"
wait(client.rollback_node_pool_upgrade(name=f"{name}/nodePools/np2"))
assert client.get_node_pool(name=f"{name}/nodePools/np2").version.startswith("1.34.")
try:
    client.rollback_node_pool_upgrade(name=f"{name}/nodePools/np2")
    raise AssertionError("second rollback accepted")
except exceptions.BadRequest:  # FAILED_PRECONDITION is HTTP 400
    pass

# cluster updates and custom methods
wait(client.update_cluster(name=name, update=gke.ClusterUpdate(desired_master_version="1.33")))
assert client.get_cluster(name=name).current_master_version.startswith("1.33.")
wait(client.update_cluster(name=name, update=gke.ClusterUpdate(
    desired_release_channel=gke.ReleaseChannel(channel=gke.ReleaseChannel.Channel.RAPID))))
assert client.get_cluster(name=name).release_channel.channel == gke.ReleaseChannel.Channel.RAPID
fp = client.get_cluster(name=name).label_fingerprint
wait(client.set_labels(request=gke.SetLabelsRequest(
    name=name, resource_labels={"env": "dev"}, label_fingerprint=fp)))
assert dict(client.get_cluster(name=name).resource_labels) == {"env": "dev"}
try:
    client.set_labels(request=gke.SetLabelsRequest(
        name=name, resource_labels={"env": "x"}, label_fingerprint=fp))
    raise AssertionError("stale fingerprint accepted")
except exceptions.BadRequest:  # FAILED_PRECONDITION is HTTP 400
    pass
wait(client.set_legacy_abac(name=name, enabled=True))
wait(client.set_network_policy(name=name, network_policy=gke.NetworkPolicy(
    provider=gke.NetworkPolicy.Provider.CALICO, enabled=True)))
wait(client.set_logging_service(name=name, logging_service="none"))
wait(client.set_monitoring_service(name=name, monitoring_service="none"))
wait(client.set_addons_config(name=name, addons_config=gke.AddonsConfig(
    http_load_balancing=gke.HttpLoadBalancing(disabled=True))))
wait(client.set_maintenance_policy(name=name, maintenance_policy=gke.MaintenancePolicy(
    window=gke.MaintenanceWindow(daily_maintenance_window=gke.DailyMaintenanceWindow(start_time="03:00")))))
wait(client.set_master_auth(request=gke.SetMasterAuthRequest(
    name=name, action=gke.SetMasterAuthRequest.Action.SET_USERNAME, update=gke.MasterAuth(username="admin"))))
wait(client.start_ip_rotation(name=name))
wait(client.complete_ip_rotation(name=name))
wait(client.set_locations(name=name, locations=[zone, "us-central1-b"]))
c = client.get_cluster(name=name)
assert c.legacy_abac.enabled
assert c.network_policy.provider == gke.NetworkPolicy.Provider.CALICO
assert c.logging_service == "none" and c.monitoring_service == "none"
assert c.addons_config.http_load_balancing.disabled
assert c.maintenance_policy.window.daily_maintenance_window.start_time == "03:00"
assert list(c.locations) == [zone, "us-central1-b"], c.locations
assert c.current_node_count == 3 * 2 + 1 * 2, c.current_node_count

cfg = client.get_server_config(name=parent)
assert cfg.default_cluster_version in cfg.valid_master_versions
assert client.get_server_config(project_id=project, zone=zone).default_cluster_version

ops = client.list_operations(parent=f"projects/{project}/locations/-").operations
assert len(ops) >= 20, len(ops)
assert all(o.status == gke.Operation.Status.DONE for o in ops)
try:
    client.cancel_operation(name=f"{parent}/operations/{ops[0].name}")
    raise AssertionError("cancelled a DONE operation")
except exceptions.BadRequest:  # FAILED_PRECONDITION is HTTP 400
    pass

# errors
for call, error in [
    (lambda: client.get_cluster(name=f"{parent}/clusters/nope"), exceptions.NotFound),
    (lambda: client.create_cluster(parent=parent, cluster=gke.Cluster(name="py1", initial_node_count=1)),
     exceptions.Conflict),
    (lambda: client.create_cluster(parent=parent, cluster=gke.Cluster(name="Bad_Name", initial_node_count=1)),
     exceptions.BadRequest),
    (lambda: client.get_node_pool(name=f"{name}/nodePools/nope"), exceptions.NotFound),
    (lambda: client.get_operation(name=f"{parent}/operations/operation-nope"), exceptions.NotFound),
    (lambda: client.update_cluster(name=name, update=gke.ClusterUpdate()), exceptions.BadRequest),
]:
    try:
        call()
        raise AssertionError(f"no {error.__name__}")
    except error:
        pass

# no token: 401 UNAUTHENTICATED (the anonymous client then tries to refresh
# its credentials, which is how it reacts to a 401)
r = requests.get(f"{url}/v1/{parent}/clusters", timeout=10)
assert r.status_code == 401, r.status_code
assert r.json()["error"]["status"] == "UNAUTHENTICATED", r.text
anonymous = gke.ClusterManagerClient(credentials=AnonymousCredentials(), transport="rest", client_options=options)
try:
    anonymous.list_clusters(parent=parent)
    raise AssertionError("a request without a token was served")
except (exceptions.Unauthorized, google.auth.exceptions.InvalidOperation):
    pass

# legacy create (initialNodeCount, no pools) and deletes
op = client.create_cluster(project_id=project, zone=zone, cluster=gke.Cluster(name="legacy1", initial_node_count=1))
wait(op, legacy=True)
assert [p.name for p in client.get_cluster(name=f"{parent}/clusters/legacy1").node_pools] == ["default-pool"]
wait(client.delete_node_pool(name=f"{name}/nodePools/np2"))
wait(client.delete_cluster(project_id=project, zone=zone, cluster_id="legacy1"), legacy=True)
wait(client.delete_cluster(name=name))
assert client.list_clusters(parent=f"projects/{project}/locations/-").clusters == []
print(f"ok: {len(polls)} operations, each DONE on its first get")
