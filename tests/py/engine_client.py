"""The Python `kubernetes` client against a kemu cluster: CRUD, paginated
lists, a watch resumed after its connection drops, 410 and 409 handling.

Run by tests/engine_python.rs with KUBECONFIG pointing at the cluster. Exits
non-zero (an AssertionError) on the first failed check."""

import json
import sys
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

config.load_kube_config()
v1 = client.CoreV1Api()
apps = client.AppsV1Api()
NS = "default"


def cm(name, labels=None, data=None):
    return client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name, labels=labels or {}),
        data=data or {"k": "v"},
    )


def expect_status(code, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except ApiException as e:
        assert e.status == code, (e.status, e.body)
        return e
    raise AssertionError(f"expected HTTP {code}")


def message(e):
    return json.loads(e.body)["message"]


# CRUD
created = v1.create_namespaced_config_map(NS, cm("one", {"app": "py"}))
assert created.metadata.uid and created.metadata.resource_version
got = v1.read_namespaced_config_map("one", NS)
assert got.data == {"k": "v"}
got.data["k"] = "w"
replaced = v1.replace_namespaced_config_map("one", NS, got)
assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)
patched = v1.patch_namespaced_config_map("one", NS, {"metadata": {"labels": {"extra": "1"}}})
assert patched.metadata.labels == {"app": "py", "extra": "1"}, patched.metadata.labels
e = expect_status(404, v1.read_namespaced_config_map, "nope", NS)
assert message(e) == 'configmaps "nope" not found', e.body
expect_status(409, v1.create_namespaced_config_map, NS, cm("one"))

# 409 on a stale update: `got` still carries the resourceVersion before the replace.
stale = got
stale.data["k"] = "stale"
e = expect_status(409, v1.replace_namespaced_config_map, "one", NS, stale)
assert "the object has been modified" in message(e), e.body
assert v1.read_namespaced_config_map("one", NS).data["k"] == "w"

# Deployments through apps/v1, with the scale subresource.
dep = client.V1Deployment(
    metadata=client.V1ObjectMeta(name="api"),
    spec=client.V1DeploymentSpec(
        replicas=2,
        selector=client.V1LabelSelector(match_labels={"app": "api"}),
        template=client.V1PodTemplateSpec(
            metadata=client.V1ObjectMeta(labels={"app": "api"}),
            spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")]),
        ),
    ),
)
apps.create_namespaced_deployment(NS, dep)
scale = apps.read_namespaced_deployment_scale("api", NS)
assert scale.spec.replicas == 2
apps.patch_namespaced_deployment_scale("api", NS, {"spec": {"replicas": 4}})
d = apps.read_namespaced_deployment("api", NS)
assert d.spec.replicas == 4 and d.metadata.generation == 2, (d.spec.replicas, d.metadata.generation)

# Pagination over a consistent snapshot.
for i in range(25):
    v1.create_namespaced_config_map(NS, cm(f"page-{i:02d}", {"set": "pages"}))
first = v1.list_namespaced_config_map(NS, label_selector="set=pages", limit=10)
assert len(first.items) == 10 and first.metadata._continue
v1.create_namespaced_config_map(NS, cm("page-99", {"set": "pages"}))  # not in the snapshot
names = [i.metadata.name for i in first.items]
token = first.metadata._continue
while token:
    page = v1.list_namespaced_config_map(NS, label_selector="set=pages", limit=10, _continue=token)
    names += [i.metadata.name for i in page.items]
    token = page.metadata._continue
assert names == [f"page-{i:02d}" for i in range(25)], names
# The namespace controller publishes kube-root-ca.crt right after the namespace
# appears; wait (bounded) for that event before counting.
for _ in range(1000):
    if any(i.metadata.name == "kube-root-ca.crt" for i in v1.list_namespaced_config_map(NS).items):
        break
    time.sleep(0.01)
unfiltered = v1.list_namespaced_config_map(NS, limit=5)
# "one", page-00..24, page-99 and the kube-root-ca.crt every namespace gets:
# 28 ConfigMaps, 5 returned.
assert unfiltered.metadata.remaining_item_count == 23, unfiltered.metadata.remaining_item_count
expect_status(400, v1.list_namespaced_config_map, NS, _continue="garbage")

# A watch that drops after two events resumes from the last resourceVersion it
# saw and receives every event in between, in order.
start_rv = v1.list_namespaced_config_map(NS).metadata.resource_version
v1.create_namespaced_config_map(NS, cm("w-1", {"set": "w"}))
w = watch.Watch()
seen = []
for ev in w.stream(v1.list_namespaced_config_map, NS, resource_version=start_rv, label_selector="set=w",
                   _preload_content=True, timeout_seconds=10):
    seen.append((ev["type"], ev["object"].metadata.name))
    last_rv = ev["object"].metadata.resource_version
    if len(seen) == 1:
        v1.create_namespaced_config_map(NS, cm("w-2", {"set": "w"}))
    if len(seen) == 2:
        w.stop()
        break
# Writes happen while no watch is connected.
v1.patch_namespaced_config_map("w-2", NS, {"data": {"k": "changed"}})
v1.delete_namespaced_config_map("w-1", NS)
v1.create_namespaced_config_map(NS, cm("w-3", {"set": "w"}))
resumed = []
w = watch.Watch()
for ev in w.stream(v1.list_namespaced_config_map, NS, resource_version=last_rv, label_selector="set=w",
                   timeout_seconds=10):
    resumed.append((ev["type"], ev["object"].metadata.name))
    if len(resumed) == 3:
        w.stop()
        break
assert seen == [("ADDED", "w-1"), ("ADDED", "w-2")], seen
assert resumed == [("MODIFIED", "w-2"), ("DELETED", "w-1"), ("ADDED", "w-3")], resumed
print("watch resumed:", seen, resumed)

# The driver moves the cluster's clock past the history's retention.
print("ADVANCE", flush=True)
sys.stdin.readline()
v1.create_namespaced_config_map(NS, cm("after-compaction"))

# A resourceVersion older than the history: the watch ends with a 410 ERROR
# event, which the client raises as ApiException(410).
try:
    for ev in watch.Watch().stream(v1.list_namespaced_config_map, NS, resource_version="1", timeout_seconds=5):
        raise AssertionError(f"unexpected event {ev['type']}")
    raise AssertionError("no 410")
except ApiException as e:
    assert e.status == 410, (e.status, e.reason)
    print("410:", e.reason)

# Delete, delete collection.
v1.delete_namespaced_config_map("one", NS)
expect_status(404, v1.read_namespaced_config_map, "one", NS)
v1.delete_collection_namespaced_config_map(NS, label_selector="set=pages")
assert v1.list_namespaced_config_map(NS, label_selector="set=pages").items == []
nodes = v1.list_node()
assert len(nodes.items) == 2, len(nodes.items)
print("ok")
sys.exit(0)
