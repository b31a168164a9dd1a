"""The Python client's portforward() to a simulated nginx: a request on the
forwarded socket gets nginx's page; a port nothing listens on reports the
kubelet's error."""
import signal
from kubernetes import client, config
from kubernetes.stream import portforward

# A hung stream fails the test instead of holding it.
signal.alarm(60)

config.load_kube_config()
v1 = client.CoreV1Api()

pf = portforward(v1.connect_get_namespaced_pod_portforward, "web", "default", ports="80")
sock = pf.socket(80)
sock.setblocking(True)
sock.sendall(b"GET /extra/page.html HTTP/1.1\r\nHost: web\r\nConnection: close\r\n\r\n")
data = b""
while True:
    chunk = sock.recv(4096)
    if not chunk:
        break
    data += chunk
sock.close()
head, _, body = data.partition(b"\r\n\r\n")
assert head.startswith(b"HTTP/1.1 200 OK\r\n"), data
assert body == b"<p>from a ConfigMap</p>\n", body
assert pf.error(80) is None, pf.error(80)
pf.close()

pf = portforward(v1.connect_get_namespaced_pod_portforward, "web", "default", ports="9")
sock = pf.socket(9)
sock.setblocking(True)
while sock.recv(4096):
    pass
err = pf.error(9)
assert err is not None and "error forwarding port 9 to pod web" in err, err
pf.close()
print("ok")
