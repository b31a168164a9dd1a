#!/usr/bin/env python3
"""Brings fixtures/k8s/printers.json's column types, priorities and
descriptions in line with a live kube-apiserver of the served minor.

The printers (which columns, and what each cell shows) are kept by hand; what
upstream declares about each column is read from the server itself: for every
listable built-in resource, an empty-or-not list asked for as a Table answers
its `columnDefinitions`. Run against `scripts/upstream start DIR`:

    python3 scripts/gen-printer-columns.py DIR

A column is matched by name; columns kemu lacks, and kinds without a printer
here, are listed on stderr and left alone.
"""

import json
import os
import subprocess
import sys

PRINTERS = "fixtures/k8s/printers.json"
RESOURCES = "fixtures/k8s/resources.json"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def table(d, server, path):
    out = subprocess.run(
        ["curl", "-sf", "--cacert", os.path.join(d, "ca.crt"),
         "--cert", os.path.join(d, "admin.crt"), "--key", os.path.join(d, "admin.key"),
         "-H", f"Accept: {TABLE}", server + path],
        check=True, capture_output=True).stdout
    return json.loads(out)


def main():
    d = sys.argv[1]
    server = open(os.path.join(d, "server")).read().strip()
    printers = json.load(open(PRINTERS))
    for r in json.load(open(RESOURCES))["resources"]:
        key = f"{r['group']}/{r['plural']}"
        if "list" not in r["verbs"] or key not in printers:
            continue
        prefix = f"/apis/{r['group']}" if r["group"] else "/api"
        t = table(d, server, f"{prefix}/{r['version']}/{r['plural']}")
        upstream = {c["name"]: c for c in t["columnDefinitions"]}
        for col in printers[key]:
            c = upstream.pop(col[0], None)
            if c is None:
                print(f"{key}: column {col[0]} is not upstream's", file=sys.stderr)
                continue
            col[1], col[2] = c["type"], c["priority"]
            del col[4:]
            col.append(c["description"])
        for name in upstream:
            print(f"{key}: upstream's column {name} is missing", file=sys.stderr)
    # The file's own layout: one column a line.
    parts = []
    for key, value in printers.items():
        if isinstance(value, list):
            cols = ",\n".join("    " + json.dumps(c, ensure_ascii=False) for c in value)
            parts.append(f"  {json.dumps(key)}: [\n{cols}\n  ]")
        else:
            parts.append(f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}")
    with open(PRINTERS, "w") as f:
        f.write("{\n" + ",\n".join(parts) + "\n}\n")


if __name__ == "__main__":
    main()
