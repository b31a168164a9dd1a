"""Reads a Prometheus text endpoint with prometheus_client's parser and
prints the samples a test asks for, as JSON: argv[1] the URL, then
NAME{label=value,...} selectors. Each selector's value is the sum of the
matching samples (0 when none)."""
import json
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

url = sys.argv[1]
text = urllib.request.urlopen(url, timeout=20).read().decode()
samples = [s for fam in text_string_to_metric_families(text) for s in fam.samples]
out = {}
for sel in sys.argv[2:]:
    name, _, rest = sel.partition("{")
    want = dict(kv.split("=", 1) for kv in rest.rstrip("}").split(",") if kv)
    out[sel] = sum(
        s.value for s in samples
        if s.name == name and all(s.labels.get(k) == v for k, v in want.items())
    )
print(json.dumps(out))
