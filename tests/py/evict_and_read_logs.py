"""The Python `kubernetes` client against a Pod guarded by a budget (argv: pod
name): an eviction is refused with 429 and the DisruptionBudget cause, and the
Pod's log reads as kemu writes it. Prints one JSON line."""
import json
import sys

from kubernetes import client, config

config.load_kube_config()
core = client.CoreV1Api()
pod = sys.argv[1]
out = {}
try:
    core.create_namespaced_pod_eviction(
        pod,
        "default",
        client.V1Eviction(metadata=client.V1ObjectMeta(name=pod, namespace="default")),
    )
    out["eviction"] = "allowed"
except client.ApiException as e:
    out["eviction"] = {"status": e.status, "body": json.loads(e.body)}
out["log"] = core.read_namespaced_pod_log(pod, "default", tail_lines=1)
print(json.dumps(out))
