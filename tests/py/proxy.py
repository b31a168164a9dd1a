"""The Python client's proxy calls: a Pod's and a Service's proxy reach the
simulated servers behind them; a port nothing listens on is upstream's 503."""
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
v1 = client.CoreV1Api()

body = v1.connect_get_namespaced_pod_proxy_with_path("agn:8080", "default", "hostname")
assert body == "agn", body
body = v1.connect_get_namespaced_pod_proxy("web", "default")
assert "Welcome to nginx!" in body, body
body = v1.connect_get_namespaced_service_proxy_with_path("agn-svc:http", "default", "hostname")
assert body == "agn", body
try:
    v1.connect_get_namespaced_pod_proxy_with_path("agn:81", "default", "")
    raise AssertionError("port 81 answered")
except ApiException as e:
    assert e.status == 503, e
    assert "connect: connection refused" in e.body, e.body
print("ok")
