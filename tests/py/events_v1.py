"""events.k8s.io/v1 through the Python `kubernetes` client (EventsV1Api)
against a kemu cluster: an Event created through either API is read, listed
and watched through both, with upstream's field mapping.

Run by tests/controllers_events.rs with KUBECONFIG pointing at the cluster.
Exits non-zero (an AssertionError) on the first failed check.

This client cannot read an events.k8s.io Event whose `eventTime` is null
(kubernetes-client/python#1826: a real apiserver serves core Events without
one that way too), so the core Events written here carry an `eventTime`, as
current recorders write them, in a namespace of their own."""

import datetime
import json

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

config.load_kube_config()
core = client.CoreV1Api()
events = client.EventsV1Api()
NS = "py-events"
NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)

core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)))

# Created through events.k8s.io/v1, read through core/v1.
created = events.create_namespaced_event(
    NS,
    client.EventsV1Event(
        metadata=client.V1ObjectMeta(name="py-v1"),
        event_time=NOW,
        reporting_controller="example.com/py",
        reporting_instance="py-1",
        action="Reconcile",
        reason="Reconciled",
        note="reconciled from python",
        type="Normal",
        regarding=client.V1ObjectReference(kind="Pod", name="web", namespace=NS),
    ),
)
assert created.note == "reconciled from python", created
assert created.regarding.name == "web", created
as_core = core.read_namespaced_event("py-v1", NS)
assert as_core.message == "reconciled from python", as_core
assert as_core.involved_object.kind == "Pod", as_core
assert as_core.reporting_component == "example.com/py", as_core
assert as_core.reporting_instance == "py-1", as_core
assert as_core.action == "Reconcile", as_core
assert as_core.event_time is not None, as_core

# Created through core/v1, listed through events.k8s.io/v1.
core.create_namespaced_event(
    NS,
    client.CoreV1Event(
        metadata=client.V1ObjectMeta(name="py-core"),
        involved_object=client.V1ObjectReference(kind="Pod", name="web", namespace=NS),
        reason="Pulled",
        message="image pulled",
        source=client.V1EventSource(component="kubelet", host="node-1"),
        first_timestamp=NOW,
        last_timestamp=NOW,
        count=3,
        type="Normal",
        event_time=NOW,
        reporting_component="kubelet",
        reporting_instance="node-1",
    ),
)
listed = events.list_namespaced_event(NS)
by_name = {e.metadata.name: e for e in listed.items}
assert {"py-v1", "py-core"} <= set(by_name), sorted(by_name)
e = by_name["py-core"]
assert e.note == "image pulled", e
assert e.deprecated_source.component == "kubelet", e
assert e.deprecated_source.host == "node-1", e
assert e.deprecated_count == 3, e
assert e.deprecated_first_timestamp == NOW, e
assert e.regarding.name == "web", e
assert listed.api_version == "events.k8s.io/v1", listed.api_version

# A watch through events.k8s.io sees a write through core, and the other way.
rv = listed.metadata.resource_version
core.create_namespaced_event(
    NS,
    client.CoreV1Event(
        metadata=client.V1ObjectMeta(name="py-core-2"),
        involved_object=client.V1ObjectReference(kind="Pod", name="web", namespace=NS),
        reason="Started",
        message="started container",
        type="Normal",
        event_time=NOW,
        reporting_component="kubelet",
        reporting_instance="node-1",
    ),
)
w = watch.Watch()
seen = None
for ev in w.stream(events.list_namespaced_event, NS, resource_version=rv, timeout_seconds=20):
    seen = ev
    w.stop()
assert seen is not None and seen["type"] == "ADDED", seen
assert seen["object"].metadata.name == "py-core-2", seen
assert seen["object"].note == "started container", seen
assert seen["raw_object"]["apiVersion"] == "events.k8s.io/v1", seen["raw_object"]

rv = core.list_namespaced_event(NS).metadata.resource_version
events.patch_namespaced_event("py-v1", NS, {"metadata": {"labels": {"seen": "yes"}}})
w = watch.Watch()
seen = None
for ev in w.stream(core.list_namespaced_event, NS, resource_version=rv, timeout_seconds=20):
    seen = ev
    w.stop()
assert seen is not None and seen["type"] == "MODIFIED", seen
assert seen["object"].metadata.labels == {"seen": "yes"}, seen
assert seen["object"].message == "reconciled from python", seen

# The strict checks of a create through events.k8s.io/v1, nothing written.
try:
    events.create_namespaced_event(
        NS,
        client.EventsV1Event(
            metadata=client.V1ObjectMeta(name="bad"),
            event_time=NOW,
            type="Normal",
            deprecated_count=4,
        ),
    )
    raise AssertionError("an Event without reportingController was accepted")
except ApiException as err:
    assert err.status == 422, (err.status, err.body)
    body = json.loads(err.body)
    assert body["reason"] == "Invalid", body
    assert 'count: Invalid value: "": needs to be unset' in body["message"], body
    assert "reportingController: Required value" in body["message"], body
expect_missing = [e.metadata.name for e in core.list_namespaced_event(NS).items]
assert "bad" not in expect_missing, expect_missing

# Deleted through one API, gone from both.
events.delete_namespaced_event("py-core", NS)
try:
    core.read_namespaced_event("py-core", NS)
    raise AssertionError("deleted Event still served")
except ApiException as err:
    assert err.status == 404, (err.status, err.body)

print("ok")
