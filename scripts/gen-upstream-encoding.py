#!/usr/bin/env python3
"""Records which fields kube-apiserver always writes, from its own OpenAPI v3.

Go's encoding/json writes a field without `omitempty` even when it is zero:
`{}` for a struct value (`status`, `template.metadata`), `0`/`""`/`false`
for a scalar, `null` for a nil slice or map. Upstream's OpenAPI v3 documents
carry exactly that: such a property has a `default` (the zero value, or a
`+default` marker's value), or is `required` without one (a nil list).

Run against a live kube-apiserver of the served minor (scripts/upstream start):

    python3 scripts/gen-upstream-encoding.py KUBECONFIG

Writes fixtures/k8s/always-written.json: definition -> [[field, value]], the
value the field takes when absent (null for a required list or map).

A few fields the documents cannot show are added from the Go types: a
non-pointer metav1.Time or MicroTime struct with `omitempty` is still written
(as null), and strings without `omitempty` that the schema marks optional.
"""

# From the Go types (k8s.io/api/core/v1 Event): written even when zero.
FROM_GO_TYPES = {
    "io.k8s.api.core.v1.Event": [["eventTime", None], ["reportingComponent", ""],
                                 ["reportingInstance", ""]],
}

import json
import os
import subprocess
import sys


def get(kubeconfig, path):
    out = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "get", "--raw", path],
                         check=True, capture_output=True).stdout
    return json.loads(out)


def main():
    kubeconfig = sys.argv[1]
    root = get(kubeconfig, "/openapi/v3")
    schemas = {}
    for path, entry in sorted(root["paths"].items()):
        if not (path.startswith("api/") or path.startswith("apis/")):
            continue
        doc = get(kubeconfig, entry["serverRelativeURL"])
        schemas.update(doc.get("components", {}).get("schemas", {}))
    out = {}
    for name, schema in sorted(schemas.items()):
        required = set(schema.get("required", []))
        fields = []
        for field, prop in schema.get("properties", {}).items():
            if field in ("kind", "apiVersion"):
                continue
            if "default" in prop:
                fields.append([field, prop["default"]])
            elif field in required and (prop.get("type") == "array"
                                        or "additionalProperties" in prop):
                fields.append([field, None])
        for field, value in FROM_GO_TYPES.get(name, []):
            if all(f != field for f, _ in fields):
                fields.append([field, value])
        if fields:
            out[name] = fields
    path = os.path.join("fixtures", "k8s", "always-written.json")
    with open(path, "w") as f:
        json.dump({"source": "kube-apiserver /openapi/v3", "definitions": out}, f,
                  indent=0, sort_keys=True)
        f.write("\n")
    print(f"{path}: {len(out)} definitions")


if __name__ == "__main__":
    main()
