"""Creates ConfigMaps PREFIX-0 … PREFIX-(COUNT-1) in `default` with the Python
`kubernetes` client (KUBECONFIG from the environment), printing each name as
soon as kemu acknowledged it. Used by tests/persist_crash.rs, which kills kemu
in the middle of such a stream: every printed name must survive the restart."""

import sys

from kubernetes import client, config

config.load_kube_config()
v1 = client.CoreV1Api()
prefix, count = sys.argv[1], int(sys.argv[2])
for i in range(count):
    name = f"{prefix}-{i}"
    v1.create_namespaced_config_map(
        "default",
        client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data={"i": str(i)}),
    )
    print(name, flush=True)
