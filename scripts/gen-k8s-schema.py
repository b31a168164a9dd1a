#!/usr/bin/env python3
"""Generates the Kubernetes schema data kemu serves, under fixtures/k8s/.

Everything comes from packages on the ordinary registries, at pinned versions:

- PyPI `kubernetes-validate` ships the upstream OpenAPI definitions of every
  minor (in JSON-Schema form, with every `x-kubernetes-*` extension); this
  script turns those of the served minor back into upstream OpenAPI v2 shape.
- PyPI `lightkube-models` (generated from the upstream OpenAPI paths of the
  minor) gives each resource's plural, scope, verbs and subresources.
- PyPI `kubernetes` (the client generated from the same spec) gives the
  connect subresources (exec, attach, portforward, proxy) and their methods.
- The crates.io `k8s-pb` source (in cargo's registry; run `cargo fetch` first)
  gives the protobuf field numbers of every message.

Short names and categories are not in any generated artefact: upstream sets
them in each resource's REST storage code, so they are listed below, once.

Outputs (run from the repository root: `python3 scripts/gen-k8s-schema.py`):
- fixtures/k8s/resources.json: the resource registry of the served minor.
- fixtures/k8s/definitions.json.gz: OpenAPI v2 definitions (upstream shape).
- fixtures/k8s/protobuf.json.gz: protobuf message layouts (tag, JSON name, type).
"""

import glob
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile

MINOR = "1.34"
PINS = {
    "kubernetes-validate": "1.37.0",
    "lightkube-models": "1.34.0.8",
    "kubernetes": "34.1.0",
}
K8S_PB = "k8s-pb-0.9.0"
OUT = "fixtures/k8s"

# Upstream REST storage: ShortNames() and Categories() per group/resource.
SHORT_NAMES = {
    "/componentstatuses": ["cs"],
    "/configmaps": ["cm"],
    "/endpoints": ["ep"],
    "/events": ["ev"],
    "/limitranges": ["limits"],
    "/namespaces": ["ns"],
    "/nodes": ["no"],
    "/persistentvolumeclaims": ["pvc"],
    "/persistentvolumes": ["pv"],
    "/pods": ["po"],
    "/replicationcontrollers": ["rc"],
    "/resourcequotas": ["quota"],
    "/serviceaccounts": ["sa"],
    "/services": ["svc"],
    "apps/daemonsets": ["ds"],
    "apps/deployments": ["deploy"],
    "apps/replicasets": ["rs"],
    "apps/statefulsets": ["sts"],
    "autoscaling/horizontalpodautoscalers": ["hpa"],
    "batch/cronjobs": ["cj"],
    "certificates.k8s.io/certificatesigningrequests": ["csr"],
    "events.k8s.io/events": ["ev"],
    "networking.k8s.io/ingresses": ["ing"],
    "networking.k8s.io/networkpolicies": ["netpol"],
    "networking.k8s.io/ipaddresses": ["ip"],
    "policy/poddisruptionbudgets": ["pdb"],
    "scheduling.k8s.io/priorityclasses": ["pc"],
    "storage.k8s.io/storageclasses": ["sc"],
    "storage.k8s.io/volumeattributesclasses": ["vac"],
    "apiextensions.k8s.io/customresourcedefinitions": ["crd", "crds"],
}
CATEGORIES = {
    "/pods": ["all"],
    "/replicationcontrollers": ["all"],
    "/services": ["all"],
    "apps/daemonsets": ["all"],
    "apps/deployments": ["all"],
    "apps/replicasets": ["all"],
    "apps/statefulsets": ["all"],
    "autoscaling/horizontalpodautoscalers": ["all"],
    "batch/cronjobs": ["all"],
    "batch/jobs": ["all"],
    "admissionregistration.k8s.io/mutatingwebhookconfigurations": ["api-extensions"],
    "admissionregistration.k8s.io/validatingwebhookconfigurations": ["api-extensions"],
    "admissionregistration.k8s.io/validatingadmissionpolicies": ["api-extensions"],
    "admissionregistration.k8s.io/validatingadmissionpolicybindings": ["api-extensions"],
    "apiextensions.k8s.io/customresourcedefinitions": ["api-extensions"],
    "apiregistration.k8s.io/apiservices": ["api-extensions"],
}
# Storage that lists but cannot watch (upstream's REST storage has no Watcher);
# the generated clients offer `watch` on every list.
NO_WATCH = {"/componentstatuses"}
# kube-apiserver's group priority (the order of /apis); others follow by name.
GROUP_ORDER = [
    "", "apiregistration.k8s.io", "apps", "events.k8s.io", "authentication.k8s.io",
    "authorization.k8s.io", "autoscaling", "batch", "certificates.k8s.io",
    "networking.k8s.io", "policy", "rbac.authorization.k8s.io", "storage.k8s.io",
    "admissionregistration.k8s.io", "apiextensions.k8s.io", "scheduling.k8s.io",
    "coordination.k8s.io", "node.k8s.io", "discovery.k8s.io",
    "flowcontrol.apiserver.k8s.io", "resource.k8s.io",
]
VERB = {"post": "create", "put": "update", "get": "get", "list": "list",
        "watch": "watch", "patch": "patch", "delete": "delete",
        "deletecollection": "deletecollection"}
METHOD_VERB = {"GET": "get", "POST": "create", "PUT": "update",
               "PATCH": "patch", "DELETE": "delete"}
GA = re.compile(r"^v\d+$")


def fetch_wheels(tmp):
    for name, version in PINS.items():
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        f"{name}=={version}", "-d", tmp], check=True)
    for whl in glob.glob(os.path.join(tmp, "*.whl")):
        zipfile.ZipFile(whl).extractall(tmp)


# ---- OpenAPI definitions -------------------------------------------------

SPECIAL_DEFS = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
        "description": "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML marshalling and unmarshalling, it produces or consumes the inner type.  This allows you to have, for example, a JSON field that can accept a name or number.",
        "format": "int-or-string", "type": "string"},
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {
        "description": "Quantity is a fixed-point representation of a number. It provides convenient marshaling/unmarshaling in JSON and YAML, in addition to String() and AsInt64() accessors.",
        "type": "string"},
}


def to_openapi(node, in_gvk_props=False):
    """JSON-Schema form (type arrays with null, $defs refs) back to OpenAPI v2."""
    if isinstance(node, list):
        return [to_openapi(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "$ref":
            out[key] = value.replace("#/$defs/", "#/definitions/")
        elif key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            out[key] = types[0] if len(types) == 1 else types
        elif key == "properties":
            out[key] = {}
            for name, prop in value.items():
                prop = to_openapi(prop)
                if in_gvk_props and name in ("apiVersion", "kind"):
                    prop.pop("enum", None)  # added by the JSON-Schema conversion
                out[key][name] = prop
        else:
            out[key] = to_openapi(value)
    return out


def definitions(tmp):
    path = glob.glob(os.path.join(
        tmp, f"kubernetes_validate/kubernetes-json-schema/v{MINOR}.0-local/_definitions.json"))[0]
    raw = json.load(open(path))["$defs"]
    defs = {}
    for name, schema in raw.items():
        if name in SPECIAL_DEFS:
            defs[name] = SPECIAL_DEFS[name]
            continue
        defs[name] = to_openapi(schema, in_gvk_props="x-kubernetes-group-version-kind" in schema)
        if "type" not in defs[name] and "properties" not in defs[name] and name.endswith(
                ("RawExtension", "FieldsV1")):
            defs[name]["type"] = "object"
    return defs


# ---- resources -----------------------------------------------------------

def lightkube_resources(tmp):
    out = []
    for f in sorted(glob.glob(os.path.join(tmp, "lightkube/resources/*.py"))):
        src = open(f).read()
        for m in re.finditer(r"class (\w+)\(res\.(\w+)[^)]*\):.*?_api_info = res\.ApiInfo\((.*?)\n    \)",
                             src, re.S):
            base, body = m.group(2), m.group(3)
            res = re.search(r"resource=res\.ResourceDef\('([^']*)', '([^']*)', '([^']*)'\)", body)
            parent = re.search(r"parent=res\.ResourceDef\('([^']*)', '([^']*)', '([^']*)'\)", body)
            action = re.search(r"action='([^']*)'", body)
            out.append({
                "base": base,
                "resource": res.groups() if res else None,
                "parent": parent.groups() if parent else None,
                "plural": re.search(r"plural='([^']*)'", body).group(1),
                "verbs": re.findall(r"'(\w+)'", re.search(r"verbs=\[(.*?)\]", body).group(1)),
                "action": action.group(1) if action else None,
            })
    return out


def connect_subresources(tmp):
    """(group, version, plural) -> {subresource: set(verbs)} for connect paths."""
    found = {}
    pat = re.compile(r"'(/apis?/[^']*\{name\}/(attach|exec|portforward|proxy))', '([A-Z]+)'")
    for f in glob.glob(os.path.join(tmp, "kubernetes/client/api/*.py")):
        for path, sub, method in pat.findall(open(f).read()):
            parts = path.strip("/").split("/")
            if parts[0] == "api":
                group, version, rest = "", parts[1], parts[2:]
            else:
                group, version, rest = parts[1], parts[2], parts[3:]
            if rest[0] == "namespaces":
                rest = rest[2:]
            plural = rest[0]
            if method in METHOD_VERB:
                found.setdefault((group, version, plural), {}).setdefault(sub, set()).add(
                    METHOD_VERB[method])
    return found


def resources(tmp, defs, pb_messages):
    items = lightkube_resources(tmp)
    connect = connect_subresources(tmp)
    by_gvk = {}
    for it in items:
        if it["action"] is None and it["resource"]:
            g, v, k = it["resource"]
            if not GA.match(v):
                continue
            verbs = sorted({VERB[x] for x in it["verbs"] if x in VERB})
            key = f"{g}/{it['plural']}"
            if key in NO_WATCH:
                verbs.remove("watch")
            by_gvk[(g, v, k)] = {
                "group": g, "version": v, "kind": k, "listKind": k + "List",
                "plural": it["plural"], "singular": k.lower(),
                "namespaced": it["base"].startswith("Namespaced"),
                "verbs": verbs,
                "shortNames": SHORT_NAMES.get(key, []),
                "categories": CATEGORIES.get(key, []),
                "subresources": [],
            }
    for it in items:
        if it["action"] is None or not it["parent"]:
            continue
        parent = by_gvk.get(it["parent"])
        if parent is None:
            continue
        g, v, k = it["resource"] if it["resource"] else it["parent"]
        parent["subresources"].append({
            "name": it["action"], "group": g, "version": v, "kind": k,
            "verbs": sorted({VERB[x] for x in it["verbs"] if x in VERB}),
        })
    for (g, v, plural), subs in connect.items():
        parent = next((r for r in by_gvk.values()
                       if (r["group"], r["version"], r["plural"]) == (g, v, plural)), None)
        if parent is None:
            continue
        for sub, verbs in subs.items():
            # The options kind upstream reports, e.g. PodPortForwardOptions.
            kind = next((m.rsplit(".", 1)[1] for m in pb_messages
                         if m.rsplit(".", 1)[1].lower() == f"{parent['kind']}{sub}options".lower()),
                        parent["kind"])
            parent["subresources"].append({"name": sub, "group": g, "version": v,
                                           "kind": kind, "verbs": sorted(verbs)})
    out = sorted(by_gvk.values(), key=lambda r: (
        GROUP_ORDER.index(r["group"]) if r["group"] in GROUP_ORDER else len(GROUP_ORDER),
        r["group"], r["version"], r["plural"]))
    for r in out:
        r["subresources"].sort(key=lambda s: s["name"])
        d = defs.get(def_name(r["group"], r["version"], r["kind"], defs))
        assert d is not None, r
        r["definition"] = def_name(r["group"], r["version"], r["kind"], defs)
    return out


def def_name(group, version, kind, defs):
    for name, d in defs.items():
        for gvk in d.get("x-kubernetes-group-version-kind", []):
            if (gvk["group"], gvk["version"], gvk["kind"]) == (group, version, kind) and \
                    name.endswith("." + kind):
                return name
    return None


# ---- protobuf layouts from the k8s-pb source ---------------------------------

def k8s_pb_dir():
    home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    dirs = glob.glob(os.path.join(home, "registry/src/*", K8S_PB, "src"))
    if not dirs:
        sys.exit(f"{K8S_PB} is not in cargo's registry: run `cargo fetch` first")
    return dirs[0]


MODULE_PREFIX = {
    "apiextensions_apiserver": "io.k8s.apiextensions-apiserver",
    "kube_aggregator": "io.k8s.kube-aggregator",
}


def module_name(parts):
    head = MODULE_PREFIX.get(parts[0], "io.k8s." + parts[0])
    return ".".join([head] + parts[1:])


FIELD = re.compile(
    r"#\[prost\((?P<kind>[a-z0-9_]+(?: = \"[^\"]*\")?), (?:(?P<label>optional|repeated|required), )?(?:packed = \"false\", )?(?:boxed, )?tag = \"(?P<tag>\d+)\"\)\]\s*"
    r"pub (?P<name>[\w#]+):\s*(?P<ty>[^;{}]+?),\n(?=\s*(?:///|#\[|$))")


def resolve(ty, mod_parts):
    """A field's Rust type -> the full name of its message."""
    inner = re.findall(r"(?:super::|[A-Za-z_][\w]*::)*[A-Z]\w*", ty)
    inner = [t for t in inner if not t.startswith(("::", "core::", "prost::", "alloc::"))
             and t.split("::")[-1] not in ("Option", "Vec", "String", "BTreeMap")]
    if not inner:
        return None
    path = inner[-1].split("::")
    parts = list(mod_parts)
    while path and path[0] == "super":
        parts.pop()
        path.pop(0)
    return module_name(parts + path[:-1]) + "." + path[-1]


def camel(snake):
    head, *rest = snake.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def norm(s):
    return re.sub(r"[^a-z0-9]", "", s.lower())


def protobuf(defs):
    root = k8s_pb_dir()
    messages = {}
    # prost renames HostIP to HostIp: match definitions case-insensitively.
    defs_by_norm = {name.lower(): d for name, d in defs.items()}
    for f in sorted(glob.glob(os.path.join(root, "**/mod.rs"), recursive=True)):
        rel = os.path.relpath(os.path.dirname(f), root)
        if rel == ".":
            continue
        mod_parts = rel.split(os.sep)
        src = open(f).read()
        for m in re.finditer(r"pub struct (\w+) \{\n(.*?)\n\}", src, re.S):
            full = module_name(mod_parts) + "." + m.group(1)
            d = defs_by_norm.get(full.lower(), {})
            props = d.get("properties", {})
            required = set(d.get("required", []))
            by_norm = {norm(p): p for p in props}
            fields = []
            for fm in FIELD.finditer(m.group(2) + "\n"):
                kind, label = fm.group("kind"), fm.group("label") or ""
                rust = fm.group("name").removeprefix("r#")
                json_name = by_norm.get(norm(rust), camel(rust))
                entry = [int(fm.group("tag")), json_name]
                if kind.startswith("btree_map"):
                    k, v = re.search(r"\"(\w+), (\w+)\"", kind).groups()
                    entry += ["map", v, resolve(fm.group("ty"), mod_parts) if v == "message" else None]
                else:
                    kind = kind.split(" ")[0]  # `bytes = "vec"`
                    entry += [kind, "repeated" if label == "repeated" else "",
                              resolve(fm.group("ty"), mod_parts) if kind == "message" else None]
                prop = props.get(json_name, {})
                # Go's encoder writes every non-pointer scalar, zero or not,
                # and omitempty drops the zeros; an explicit zero matters only
                # for pointers with a non-zero server default ("Defaults to 1").
                scalar = entry[2] in ("int32", "int64", "bool", "double", "float")
                keep_zero = json_name in required or (
                    scalar and re.search(r"[Dd]efaults? (?:to|is) (?:[1-9]|true)", prop.get("description", "")))
                entry.append(1 if keep_zero else 0)
                fields.append(entry)
            messages[full] = fields
    # Go structs embedded with `json:",inline"` (Volume's VolumeSource,
    # IngressRule's IngressRuleValue, Probe's ProbeHandler…) are a protobuf
    # field but no JSON property: their fields sit in the parent. Mark them
    # with an empty JSON name.
    def flat_names(name, seen=()):
        out = set()
        for c in messages.get(name, []):
            if c[1] == "" and c[4] not in seen:
                out |= flat_names(c[4], seen + (name,))
            else:
                out.add(norm(c[1]))
        return out

    changed = True
    while changed:  # embedded types may embed others (RuleWithOperations)
        changed = False
        for full, fields in messages.items():
            props = defs_by_norm.get(full.lower(), {}).get("properties")
            if not props:
                continue
            for f in fields:
                if f[2] != "message" or f[1] == "" or f[1] in props or f[3] == "repeated":
                    continue
                # The embedded type often has no definition of its own:
                # compare its protobuf field names, normalised, with the parent's.
                child = flat_names(f[4] or "")
                if child and child <= {norm(p) for p in props}:
                    f[1] = ""
                    changed = True
    return messages


def main():
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        fetch_wheels(tmp)
        defs = definitions(tmp)
        pb = protobuf(defs)
        res = resources(tmp, defs, pb)
    with open(os.path.join(OUT, "resources.json"), "w") as f:
        json.dump({"minor": MINOR, "sources": PINS, "resources": res}, f, indent=1, sort_keys=True)
        f.write("\n")
    for name, data in (("definitions.json.gz", defs), ("protobuf.json.gz", pb)):
        raw = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
        with open(os.path.join(OUT, name), "wb") as f:
            # mtime 0: the same input gives the same bytes.
            with gzip.GzipFile(fileobj=f, mode="wb", mtime=0, compresslevel=9) as gz:
                gz.write(raw)
    print(f"{len(res)} resources, {len(defs)} definitions, {len(pb)} protobuf messages")


if __name__ == "__main__":
    main()
