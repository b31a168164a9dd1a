"""Finalizers and deletion through the Python `kubernetes` client: an object
with a finalizer stays, terminating, after DELETE until a patch removes the
finalizer, then disappears; a watcher sees MODIFIED then DELETED; no new
finalizer may be added while it terminates; delete preconditions that do not
match are a 409.

Run by tests/engine_delete.rs with KUBECONFIG pointing at the cluster. Exits
non-zero (an AssertionError) on the first failed check."""

import json
import threading

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

config.load_kube_config()
v1 = client.CoreV1Api()
NS = "default"
NAME = "held"


def expect_status(code, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except ApiException as e:
        assert e.status == code, (e.status, e.body)
        return json.loads(e.body)
    raise AssertionError(f"expected HTTP {code}")


created = v1.create_namespaced_config_map(
    NS,
    client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=NAME, finalizers=["example.com/hold"]),
        data={"k": "v"},
    ),
)
rv = created.metadata.resource_version

# A watcher from the create on: it must see the deletion mark, then the removal.
seen = []
done = threading.Event()


def watch_it():
    w = watch.Watch()
    for ev in w.stream(
        v1.list_namespaced_config_map,
        NS,
        field_selector=f"metadata.name={NAME}",
        resource_version=rv,
        timeout_seconds=30,
    ):
        seen.append((ev["type"], ev["object"].metadata.deletion_timestamp is not None))
        if ev["type"] == "DELETED":
            w.stop()
    done.set()


t = threading.Thread(target=watch_it, daemon=True)
t.start()

# Preconditions that do not match: 409, nothing changes.
body = expect_status(
    409,
    v1.delete_namespaced_config_map,
    NAME,
    NS,
    body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="not-the-uid")),
)
assert body["reason"] == "Conflict", body
assert "the UID in the precondition (not-the-uid) does not match" in body["message"], body
assert v1.read_namespaced_config_map(NAME, NS).metadata.deletion_timestamp is None

# DELETE: the finalizer holds it; the answer is the terminating object.
resp = v1.delete_namespaced_config_map(NAME, NS, _preload_content=False)
assert resp.status == 200, resp.status
answered = json.loads(resp.data)
assert answered["kind"] == "ConfigMap", answered
assert answered["metadata"]["deletionTimestamp"], answered
held = v1.read_namespaced_config_map(NAME, NS)
assert held.metadata.deletion_timestamp is not None
assert held.metadata.deletion_grace_period_seconds == 0
assert held.metadata.finalizers == ["example.com/hold"]

# Deleting again changes nothing.
again = json.loads(v1.delete_namespaced_config_map(NAME, NS, _preload_content=False).data)
assert again["metadata"]["resourceVersion"] == held.metadata.resource_version, again

# No new finalizers while terminating.
body = expect_status(
    422,
    v1.patch_namespaced_config_map,
    NAME,
    NS,
    [{"op": "add", "path": "/metadata/finalizers/-", "value": "example.com/more"}],
)
assert "no new finalizers can be added if the object is being deleted" in body["message"], body

# Removing the last finalizer removes the object.
v1.patch_namespaced_config_map(
    NAME, NS, [{"op": "remove", "path": "/metadata/finalizers"}]
)
expect_status(404, v1.read_namespaced_config_map, NAME, NS)

assert done.wait(30), "the watch never saw the deletion"
assert seen == [("MODIFIED", True), ("DELETED", True)], seen
print("ok")
