"""The Python client's stream() against a simulated container: a command's
output, stdin, and the exit code read from the status channel."""
import signal
from kubernetes import client, config
from kubernetes.stream import stream

# A hung stream fails the test instead of holding it.
signal.alarm(60)

config.load_kube_config()
v1 = client.CoreV1Api()

out = stream(v1.connect_get_namespaced_pod_exec, "web", "default",
             command=["cat", "/etc/config/app.yaml"], container="a",
             stderr=True, stdin=False, stdout=True, tty=False)
assert out == "color: blue\n", repr(out)

resp = stream(v1.connect_get_namespaced_pod_exec, "web", "default",
              command=["sh", "-c", "read line; echo got $line; echo oops >&2; exit 7"],
              container="a", stderr=True, stdin=True, stdout=True, tty=False,
              _preload_content=False)
resp.write_stdin("hello\n")
stdout, stderr = "", ""
while resp.is_open():
    resp.update(timeout=5)
    if resp.peek_stdout():
        stdout += resp.read_stdout()
    if resp.peek_stderr():
        stderr += resp.read_stderr()
assert stdout == "got hello\n", repr(stdout)
assert stderr == "oops\n", repr(stderr)
assert resp.returncode == 7, resp.returncode
print("ok")
