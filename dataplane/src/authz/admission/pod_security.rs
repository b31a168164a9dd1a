//! PodSecurity admission: the Pod Security Standards a namespace's
//! `pod-security.kubernetes.io/*` labels ask for, as kube-apiserver's
//! built-in plugin applies them.
//!
//! - A Namespace's labels must name a level (`privileged`, `baseline`,
//!   `restricted`) and a version (`latest`, `v1.N`): [`namespace_errors`].
//!   Raising its `enforce` level warns of the Pods already there that would
//!   not be admitted: [`existing_pod_warnings`].
//! - A Pod created where `enforce` is above `privileged` is refused (403)
//!   when it breaks a check of that level; the `warn` level's findings are
//!   `Warning`s: [`review_pod`]. Workloads with a Pod template only get the
//!   warnings: [`review_template`].
//!
//! The checks are upstream's (pod-security-admission 1.34), in its order:
//! the baseline ones by ID, then the restricted ones by ID, a restricted
//! check replacing the baseline check it tightens. Each gives upstream's
//! reason and detail, so the messages read as kube-apiserver's.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::api::options::go_quote;
use crate::error::Cause;

/// The label prefix of the three modes.
const PREFIX: &str = "pod-security.kubernetes.io/";
/// The modes, in the order upstream reads their labels.
const MODES: [&str; 3] = ["enforce", "audit", "warn"];

/// A Pod Security Standard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// No restriction.
    Privileged,
    /// Known privilege escalations prevented.
    Baseline,
    /// Hardening best practice.
    Restricted,
}

impl Level {
    fn parse(s: &str) -> Option<Level> {
        match s {
            "privileged" => Some(Level::Privileged),
            "baseline" => Some(Level::Baseline),
            "restricted" => Some(Level::Restricted),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }
}

/// A level at a policy version (`latest` or `v1.N`, as the label gave it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelVersion {
    /// The standard.
    pub level: Level,
    /// The version, as written in messages.
    pub version: String,
}

impl std::fmt::Display for LevelVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.level.name(), self.version)
    }
}

/// What a namespace's labels ask of its Pods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Refused when broken.
    pub enforce: LevelVersion,
    /// Warned of when broken.
    pub warn: LevelVersion,
}

/// Whether a namespace's `labels` name any PodSecurity mode (else every
/// level is `privileged` and there is nothing to check).
pub fn labelled(labels: &Value) -> bool {
    labels
        .as_object()
        .is_some_and(|l| l.keys().any(|k| k.starts_with(PREFIX)))
}

fn version_valid(v: &str) -> bool {
    if v == "latest" {
        return true;
    }
    let Some(minor) = v.strip_prefix("v1.") else {
        return false;
    };
    !minor.is_empty()
        && minor.bytes().all(|b| b.is_ascii_digit())
        && (minor == "0" || !minor.starts_with('0'))
        && minor.parse::<u32>().is_ok()
}

/// The policy a namespace with `labels` holds its Pods to, and what is
/// wrong with the labels (upstream's `PolicyToEvaluate`: an unknown
/// `enforce` level enforces `restricted`, unknown audit and warn levels
/// fall back to `privileged`, an unknown version to `latest`).
pub fn policy(labels: &Value) -> (Policy, Vec<Cause>) {
    let privileged = LevelVersion {
        level: Level::Privileged,
        version: "latest".into(),
    };
    let mut levels = [privileged.clone(), privileged.clone(), privileged];
    let mut causes = Vec::new();
    let mut given = [false; 3];
    let mut version_given = [false; 3];
    let label = |mode: &str, suffix: &str| labels[format!("{PREFIX}{mode}{suffix}")].as_str();
    for (i, mode) in MODES.iter().enumerate() {
        if let Some(level) = label(mode, "") {
            match Level::parse(level) {
                Some(l) => {
                    levels[i].level = l;
                    given[i] = true;
                }
                None => {
                    levels[i].level = if i == 0 {
                        Level::Restricted
                    } else {
                        Level::Privileged
                    };
                    causes.push(invalid(
                        mode,
                        level,
                        "must be one of privileged, baseline, restricted",
                    ));
                }
            }
        }
        if let Some(version) = label(mode, "-version") {
            version_given[i] = true;
            if version_valid(version) {
                levels[i].version = version.to_owned();
            } else {
                causes.push(invalid(
                    &format!("{mode}-version"),
                    version,
                    "must be \"latest\" or \"v1.x\"",
                ));
            }
        }
    }
    let [enforce, _audit, mut warn] = levels;
    // Warn defaults to a stricter enforce level.
    if !given[2] && given[0] && enforce.level > warn.level {
        warn.level = enforce.level;
        if !version_given[2] {
            warn.version = enforce.version.clone();
        }
    }
    (Policy { enforce, warn }, causes)
}

fn invalid(mode_suffix: &str, value: &str, message: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: {}: {message}", go_quote(value)),
        field: format!("metadata.labels[{PREFIX}{mode_suffix}]"),
    }
}

/// What is wrong with a Namespace's PodSecurity labels on create, or on an
/// update that changed what is wrong (`old_labels`).
pub fn namespace_errors(labels: &Value, old_labels: Option<&Value>) -> Vec<Cause> {
    let (_, causes) = policy(labels);
    match old_labels {
        Some(old) if !causes.is_empty() => {
            let (_, before) = policy(old);
            if !before.is_empty() && before == causes {
                return Vec::new();
            }
            causes
        }
        _ => causes,
    }
}

/// The warnings of a Namespace update that raises its `enforce` level:
/// the existing `pods` that would now be refused, grouped by what they
/// break.
pub fn existing_pod_warnings(
    namespace: &str,
    labels: &Value,
    old_labels: &Value,
    pods: &[Value],
) -> Vec<String> {
    let ((new, new_errors), (old, _)) = (policy(labels), policy(old_labels));
    if !new_errors.is_empty()
        || new.enforce == old.enforce
        || new.enforce.level == Level::Privileged
    {
        return Vec::new();
    }
    if new.enforce.version == old.enforce.version && new.enforce.level <= old.enforce.level {
        return Vec::new();
    }
    // reasons → (first pod name, count), in the order first seen.
    let mut seen: Vec<(String, String, usize)> = Vec::new();
    for pod in pods {
        let failed = evaluate(new.enforce.level, &pod["metadata"], &pod["spec"]);
        if failed.is_empty() {
            continue;
        }
        let reasons: Vec<&str> = failed.iter().map(|(r, _)| r.as_str()).collect();
        let reasons = reasons.join(", ");
        let name = pod["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        match seen.iter_mut().find(|(r, ..)| *r == reasons) {
            Some((_, first, count)) => {
                if name < *first {
                    *first = name;
                }
                *count += 1;
            }
            None => seen.push((reasons, name, 1)),
        }
    }
    if seen.is_empty() {
        return Vec::new();
    }
    let mut pods: Vec<String> = seen
        .into_iter()
        .map(|(reasons, first, count)| match count {
            1 => format!("{first}: {reasons}"),
            2 => format!("{first} (and 1 other pod): {reasons}"),
            n => format!("{first} (and {} other pods): {reasons}", n - 1),
        })
        .collect();
    pods.sort();
    let mut warnings = vec![format!(
        "existing pods in namespace {} violate the new PodSecurity enforce level {}",
        go_quote(namespace),
        go_quote(&new.enforce.to_string())
    )];
    warnings.extend(pods);
    warnings
}

/// A Pod's review: `Err` the refusal's message when `enforce` refuses it,
/// else the warnings to answer with.
pub fn review_pod(labels: &Value, pod: &Value) -> Result<Vec<String>, String> {
    let (policy, _) = policy(labels);
    let (meta, spec) = (&pod["metadata"], &pod["spec"]);
    let enforced = evaluate(policy.enforce.level, meta, spec);
    if !enforced.is_empty() {
        return Err(format!(
            "violates PodSecurity {}: {}",
            go_quote(&policy.enforce.to_string()),
            detail(&enforced)
        ));
    }
    Ok(warn(&policy, meta, spec))
}

/// A workload's review: the warnings its Pod template earns (a workload is
/// never refused).
pub fn review_template(labels: &Value, group: &str, kind: &str, object: &Value) -> Vec<String> {
    let template = match (group, kind) {
        ("batch", "CronJob") => object.pointer("/spec/jobTemplate/spec/template"),
        ("", "PodTemplate") => object.get("template"),
        ("", "ReplicationController")
        | ("apps", "ReplicaSet" | "Deployment" | "StatefulSet" | "DaemonSet")
        | ("batch", "Job") => object.pointer("/spec/template"),
        _ => None,
    };
    let Some(template) = template else {
        return Vec::new();
    };
    let (policy, _) = policy(labels);
    warn(&policy, &template["metadata"], &template["spec"])
}

fn warn(policy: &Policy, meta: &Value, spec: &Value) -> Vec<String> {
    let failed = evaluate(policy.warn.level, meta, spec);
    if failed.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "would violate PodSecurity {}: {}",
        go_quote(&policy.warn.to_string()),
        detail(&failed)
    )]
}

/// Upstream's `ForbiddenDetail`: each reason, its detail in parentheses.
fn detail(failed: &[(String, String)]) -> String {
    failed
        .iter()
        .map(|(reason, detail)| {
            if detail.is_empty() {
                reason.clone()
            } else {
                format!("{reason} ({detail})")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A failed check: its reason and detail.
type Failure = (String, String);
/// A check of a Pod's metadata and spec.
type Check = fn(&Value, &Value) -> Option<Failure>;

/// The baseline checks, by ID.
const BASELINE: [(&str, Check); 12] = [
    ("appArmorProfile", app_armor),
    ("capabilities_baseline", capabilities_baseline),
    ("hostNamespaces", host_namespaces),
    ("hostPathVolumes", host_path_volumes),
    ("hostPorts", host_ports),
    ("hostProbesAndHostLifecycle", probe_hosts),
    ("privileged", privileged),
    ("procMount", proc_mount),
    ("seLinuxOptions", se_linux),
    ("seccompProfile_baseline", seccomp_baseline),
    ("sysctls", sysctls),
    ("windowsHostProcess", host_process),
];

/// The restricted checks, by ID, with the baseline check each replaces.
const RESTRICTED: [(&str, Option<&str>, Check); 6] = [
    ("allowPrivilegeEscalation", None, allow_privilege_escalation),
    (
        "capabilities_restricted",
        Some("capabilities_baseline"),
        capabilities_restricted,
    ),
    (
        "restrictedVolumes",
        Some("hostPathVolumes"),
        restricted_volumes,
    ),
    ("runAsNonRoot", None, run_as_non_root),
    ("runAsUser", None, run_as_user),
    (
        "seccompProfile_restricted",
        Some("seccompProfile_baseline"),
        seccomp_restricted,
    ),
];

/// Every check of `level` that `meta` and `spec` fail, in upstream's order.
pub fn evaluate(level: Level, meta: &Value, spec: &Value) -> Vec<Failure> {
    if level == Level::Privileged {
        return Vec::new();
    }
    let replaced: Vec<&str> = if level == Level::Restricted {
        RESTRICTED.iter().filter_map(|(_, r, _)| *r).collect()
    } else {
        Vec::new()
    };
    let baseline = BASELINE
        .iter()
        .filter(|(id, _)| !replaced.contains(id))
        .map(|(_, c)| *c);
    let restricted = RESTRICTED
        .iter()
        .filter(|_| level == Level::Restricted)
        .map(|(_, _, c)| *c);
    baseline
        .chain(restricted)
        .filter_map(|check| check(meta, spec))
        .collect()
}

fn fail(reason: &str, detail: String) -> Option<Failure> {
    Some((reason.to_owned(), detail))
}

/// Every container of the spec: init, regular, ephemeral.
fn containers(spec: &Value) -> impl Iterator<Item = &Value> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |k| spec[k].as_array().into_iter().flatten())
}

fn name(c: &Value) -> String {
    c["name"].as_str().unwrap_or_default().to_owned()
}

fn join_quote<S: AsRef<str>>(items: &[S]) -> String {
    items
        .iter()
        .map(|s| format!("\"{}\"", s.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn plural<'a>(one: &'a str, many: &'a str, n: usize) -> &'a str {
    if n == 1 { one } else { many }
}

/// `container "a"` / `containers "a", "b"`.
fn these_containers(names: &[String]) -> String {
    format!(
        "{} {}",
        plural("container", "containers", names.len()),
        join_quote(names)
    )
}

fn windows(spec: &Value) -> bool {
    spec["os"]["name"] == "windows"
}

fn str_at<'a>(v: &'a Value, path: &str) -> Option<&'a str> {
    v.pointer(path).and_then(Value::as_str)
}

/// Containers for which `bad` holds.
fn bad_containers(spec: &Value, bad: impl Fn(&Value) -> bool) -> Vec<String> {
    containers(spec).filter(|c| bad(c)).map(name).collect()
}

fn app_armor(meta: &Value, spec: &Value) -> Option<Failure> {
    let allowed = |t: &str| matches!(t, "RuntimeDefault" | "Localhost");
    let mut setters = Vec::new();
    let mut values = BTreeSet::new();
    if let Some(t) = str_at(spec, "/securityContext/appArmorProfile/type")
        && !allowed(t)
    {
        setters.push("pod".to_owned());
        values.insert(t.to_owned());
    }
    let bad = bad_containers(spec, |c| {
        str_at(c, "/securityContext/appArmorProfile/type").is_some_and(|t| !allowed(t))
    });
    for c in containers(spec) {
        if let Some(t) = str_at(c, "/securityContext/appArmorProfile/type")
            && !allowed(t)
        {
            values.insert(t.to_owned());
        }
    }
    if !bad.is_empty() {
        setters.push(these_containers(&bad));
    }
    let mut annotations: Vec<String> = meta["annotations"]
        .as_object()
        .into_iter()
        .flat_map(Map::iter)
        .filter(|(k, _)| k.starts_with("container.apparmor.security.beta.kubernetes.io/"))
        .filter_map(|(k, v)| {
            let v = v.as_str().unwrap_or_default();
            let ok = v.is_empty() || v == "runtime/default" || v.starts_with("localhost/");
            (!ok).then(|| format!("{k}={}", go_quote(v)))
        })
        .collect();
    let mut list: Vec<String> = values.into_iter().collect();
    if !annotations.is_empty() {
        annotations.sort();
        setters.push(plural("annotation", "annotations", annotations.len()).to_owned());
        list.extend(annotations);
    }
    if setters.is_empty() {
        return None;
    }
    fail(
        plural(
            "forbidden AppArmor profile",
            "forbidden AppArmor profiles",
            list.len(),
        ),
        format!(
            "{} must not set AppArmor profile type to {}",
            setters.join(" and "),
            join_quote(&list)
        ),
    )
}

/// Capabilities a baseline container may add.
const DEFAULT_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

fn added(c: &Value) -> impl Iterator<Item = &str> {
    c.pointer("/securityContext/capabilities/add")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

fn capabilities_baseline(_: &Value, spec: &Value) -> Option<Failure> {
    let mut caps = BTreeSet::new();
    let bad = bad_containers(spec, |c| {
        added(c).any(|a| !DEFAULT_CAPABILITIES.contains(&a))
    });
    for c in containers(spec) {
        caps.extend(added(c).filter(|a| !DEFAULT_CAPABILITIES.contains(a)));
    }
    if bad.is_empty() {
        return None;
    }
    let caps: Vec<&str> = caps.into_iter().collect();
    fail(
        "non-default capabilities",
        format!(
            "{} must not include {} in securityContext.capabilities.add",
            these_containers(&bad),
            join_quote(&caps)
        ),
    )
}

fn host_namespaces(_: &Value, spec: &Value) -> Option<Failure> {
    let on: Vec<String> = ["hostNetwork", "hostPID", "hostIPC"]
        .into_iter()
        .filter(|k| spec[*k] == true)
        .map(|k| format!("{k}=true"))
        .collect();
    if on.is_empty() {
        return None;
    }
    fail("host namespaces", on.join(", "))
}

fn volumes(spec: &Value) -> impl Iterator<Item = &Value> {
    spec["volumes"].as_array().into_iter().flatten()
}

fn host_path_volumes(_: &Value, spec: &Value) -> Option<Failure> {
    let bad: Vec<String> = volumes(spec)
        .filter(|v| v["hostPath"].is_object())
        .map(name)
        .collect();
    if bad.is_empty() {
        return None;
    }
    fail(
        "hostPath volumes",
        format!(
            "{} {}",
            plural("volume", "volumes", bad.len()),
            join_quote(&bad)
        ),
    )
}

fn host_ports(_: &Value, spec: &Value) -> Option<Failure> {
    let port = |p: &Value| p["hostPort"].as_i64().filter(|n| *n != 0);
    let ports_of = |c: &Value| -> Vec<i64> {
        c["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(port)
            .collect()
    };
    let bad = bad_containers(spec, |c| !ports_of(c).is_empty());
    if bad.is_empty() {
        return None;
    }
    // Upstream sorts the ports as strings.
    let ports: BTreeSet<String> = containers(spec)
        .flat_map(ports_of)
        .map(|p| p.to_string())
        .collect();
    let ports: Vec<String> = ports.into_iter().collect();
    fail(
        "hostPort",
        format!(
            "{} {} {} {}",
            these_containers(&bad),
            plural("uses", "use", bad.len()),
            plural("hostPort", "hostPorts", ports.len()),
            ports.join(", ")
        ),
    )
}

fn probe_hosts(_: &Value, spec: &Value) -> Option<Failure> {
    let hosts_of = |c: &Value| -> Vec<String> {
        let handlers = [
            &c["livenessProbe"],
            &c["readinessProbe"],
            &c["startupProbe"],
            &c["lifecycle"]["postStart"],
            &c["lifecycle"]["preStop"],
        ];
        handlers
            .into_iter()
            .flat_map(|h| [&h["httpGet"]["host"], &h["tcpSocket"]["host"]])
            .filter_map(Value::as_str)
            .filter(|h| !h.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let bad: BTreeSet<String> = containers(spec)
        .filter(|c| !hosts_of(c).is_empty())
        .map(name)
        .collect();
    if bad.is_empty() {
        return None;
    }
    let hosts: BTreeSet<String> = containers(spec).flat_map(hosts_of).collect();
    let (bad, hosts): (Vec<String>, Vec<String>) =
        (bad.into_iter().collect(), hosts.into_iter().collect());
    fail(
        "probe or lifecycle host",
        format!(
            "{} {} {} {}",
            these_containers(&bad),
            plural("uses", "use", bad.len()),
            plural(
                "probe or lifecycle host",
                "probe or lifecycle hosts",
                hosts.len()
            ),
            join_quote(&hosts)
        ),
    )
}

fn privileged(_: &Value, spec: &Value) -> Option<Failure> {
    let bad = bad_containers(spec, |c| c["securityContext"]["privileged"] == true);
    if bad.is_empty() {
        return None;
    }
    fail(
        "privileged",
        format!(
            "{} must not set securityContext.privileged=true",
            these_containers(&bad)
        ),
    )
}

fn proc_mount(_: &Value, spec: &Value) -> Option<Failure> {
    let mount = |c: &Value| {
        str_at(c, "/securityContext/procMount")
            .filter(|m| *m != "Default")
            .map(str::to_owned)
    };
    let bad = bad_containers(spec, |c| mount(c).is_some());
    if bad.is_empty() {
        return None;
    }
    let kinds: BTreeSet<String> = containers(spec).filter_map(mount).collect();
    let kinds: Vec<String> = kinds.into_iter().collect();
    fail(
        "procMount",
        format!(
            "{} must not set securityContext.procMount to {}",
            these_containers(&bad),
            join_quote(&kinds)
        ),
    )
}

fn se_linux(_: &Value, spec: &Value) -> Option<Failure> {
    const TYPES: [&str; 5] = [
        "",
        "container_t",
        "container_init_t",
        "container_kvm_t",
        "container_engine_t",
    ];
    let mut bad_types = BTreeSet::new();
    let (mut user, mut role) = (false, false);
    let mut check = |o: &Value| -> bool {
        if !o.is_object() {
            return true;
        }
        let mut ok = true;
        let t = o["type"].as_str().unwrap_or_default();
        if !TYPES.contains(&t) {
            ok = false;
            bad_types.insert(t.to_owned());
        }
        if o["user"].as_str().is_some_and(|u| !u.is_empty()) {
            ok = false;
            user = true;
        }
        if o["role"].as_str().is_some_and(|r| !r.is_empty()) {
            ok = false;
            role = true;
        }
        ok
    };
    let mut setters = Vec::new();
    if !check(&spec["securityContext"]["seLinuxOptions"]) {
        setters.push("pod".to_owned());
    }
    let bad: Vec<String> = containers(spec)
        .filter(|c| !check(&c["securityContext"]["seLinuxOptions"]))
        .map(name)
        .collect();
    if !bad.is_empty() {
        setters.push(these_containers(&bad));
    }
    if setters.is_empty() {
        return None;
    }
    let mut data = Vec::new();
    if !bad_types.is_empty() {
        let types: Vec<String> = bad_types.into_iter().collect();
        data.push(format!(
            "{} {}",
            plural("type", "types", types.len()),
            join_quote(&types)
        ));
    }
    if user {
        data.push("user may not be set".to_owned());
    }
    if role {
        data.push("role may not be set".to_owned());
    }
    fail(
        "seLinuxOptions",
        format!(
            "{} set forbidden securityContext.seLinuxOptions: {}",
            setters.join(" and "),
            data.join("; ")
        ),
    )
}

fn seccomp_valid(t: &str) -> bool {
    matches!(t, "Localhost" | "RuntimeDefault")
}

/// The seccomp checks: explicit bad types always fail; with `required`,
/// so does a container left without a profile when the pod has none.
fn seccomp(spec: &Value, required: bool) -> Option<Failure> {
    let mut setters = Vec::new();
    let mut values = BTreeSet::new();
    let pod_type = str_at(spec, "/securityContext/seccompProfile/type");
    let pod_set = spec["securityContext"]["seccompProfile"].is_object();
    let mut pod_valid = false;
    if pod_set {
        let t = pod_type.unwrap_or_default();
        if seccomp_valid(t) {
            pod_valid = true;
        } else {
            setters.push("pod".to_owned());
            values.insert(t.to_owned());
        }
    }
    let (mut explicit, mut implicit) = (Vec::new(), Vec::new());
    for c in containers(spec) {
        if c["securityContext"]["seccompProfile"].is_object() {
            let t = str_at(c, "/securityContext/seccompProfile/type").unwrap_or_default();
            if !seccomp_valid(t) {
                explicit.push(name(c));
                values.insert(t.to_owned());
            }
        } else if !pod_valid {
            implicit.push(name(c));
        }
    }
    if !explicit.is_empty() {
        setters.push(these_containers(&explicit));
    }
    if !setters.is_empty() {
        let values: Vec<String> = values.into_iter().collect();
        return fail(
            "seccompProfile",
            format!(
                "{} must not set securityContext.seccompProfile.type to {}",
                setters.join(" and "),
                join_quote(&values)
            ),
        );
    }
    if required && !implicit.is_empty() {
        return fail(
            "seccompProfile",
            format!(
                "pod or {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\"",
                these_containers(&implicit)
            ),
        );
    }
    None
}

fn seccomp_baseline(_: &Value, spec: &Value) -> Option<Failure> {
    seccomp(spec, false)
}

fn seccomp_restricted(_: &Value, spec: &Value) -> Option<Failure> {
    if windows(spec) {
        return None;
    }
    seccomp(spec, true)
}

/// Sysctls a baseline pod may set (namespaced and safe).
const SAFE_SYSCTLS: [&str; 12] = [
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
];

fn sysctls(_: &Value, spec: &Value) -> Option<Failure> {
    let bad: Vec<&str> = spec["securityContext"]["sysctls"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["name"].as_str())
        .filter(|n| !SAFE_SYSCTLS.contains(n))
        .collect();
    if bad.is_empty() {
        return None;
    }
    fail("forbidden sysctls", bad.join(", "))
}

fn host_process(_: &Value, spec: &Value) -> Option<Failure> {
    let on = |sc: &Value| sc["windowsOptions"]["hostProcess"] == true;
    let mut setters = Vec::new();
    if on(&spec["securityContext"]) {
        setters.push("pod".to_owned());
    }
    let bad = bad_containers(spec, |c| on(&c["securityContext"]));
    if !bad.is_empty() {
        setters.push(these_containers(&bad));
    }
    if setters.is_empty() {
        return None;
    }
    fail(
        "hostProcess",
        format!(
            "{} must not set securityContext.windowsOptions.hostProcess=true",
            setters.join(" and ")
        ),
    )
}

fn allow_privilege_escalation(_: &Value, spec: &Value) -> Option<Failure> {
    if windows(spec) {
        return None;
    }
    let bad = bad_containers(spec, |c| {
        c["securityContext"]["allowPrivilegeEscalation"] != false
    });
    if bad.is_empty() {
        return None;
    }
    fail(
        "allowPrivilegeEscalation != false",
        format!(
            "{} must set securityContext.allowPrivilegeEscalation=false",
            these_containers(&bad)
        ),
    )
}

fn capabilities_restricted(_: &Value, spec: &Value) -> Option<Failure> {
    if windows(spec) {
        return None;
    }
    let mut missing_drop = Vec::new();
    let mut adding = Vec::new();
    let mut caps = BTreeSet::new();
    for c in containers(spec) {
        if !c["securityContext"]["capabilities"].is_object() {
            missing_drop.push(name(c));
            continue;
        }
        let drops_all = c
            .pointer("/securityContext/capabilities/drop")
            .and_then(Value::as_array)
            .is_some_and(|d| d.iter().any(|x| x == "ALL"));
        if !drops_all {
            missing_drop.push(name(c));
        }
        let forbidden: Vec<&str> = added(c).filter(|a| *a != "NET_BIND_SERVICE").collect();
        if !forbidden.is_empty() {
            adding.push(name(c));
            caps.extend(forbidden);
        }
    }
    let mut details = Vec::new();
    if !missing_drop.is_empty() {
        details.push(format!(
            "{} must set securityContext.capabilities.drop=[\"ALL\"]",
            these_containers(&missing_drop)
        ));
    }
    if !adding.is_empty() {
        let caps: Vec<&str> = caps.into_iter().collect();
        details.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            these_containers(&adding),
            join_quote(&caps)
        ));
    }
    if details.is_empty() {
        return None;
    }
    fail("unrestricted capabilities", details.join("; "))
}

/// Volume sources a restricted pod may use.
const ALLOWED_VOLUMES: [&str; 9] = [
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "image",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

/// The restricted volume sources upstream names (the others are "unknown").
const NAMED_VOLUMES: [&str; 21] = [
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "nfs",
    "iscsi",
    "glusterfs",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "fc",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "storageos",
];

fn restricted_volumes(_: &Value, spec: &Value) -> Option<Failure> {
    let mut bad = Vec::new();
    let mut types = BTreeSet::new();
    for v in volumes(spec) {
        if ALLOWED_VOLUMES.iter().any(|k| !v[*k].is_null()) {
            continue;
        }
        bad.push(name(v));
        let named = NAMED_VOLUMES.iter().find(|k| !v[**k].is_null());
        types.insert(named.copied().unwrap_or("unknown"));
    }
    if bad.is_empty() {
        return None;
    }
    let types: Vec<&str> = types.into_iter().collect();
    fail(
        "restricted volume types",
        format!(
            "{} {} {} {} {}",
            plural("volume", "volumes", bad.len()),
            join_quote(&bad),
            plural("uses", "use", bad.len()),
            plural(
                "restricted volume type",
                "restricted volume types",
                types.len()
            ),
            join_quote(&types)
        ),
    )
}

fn run_as_non_root(_: &Value, spec: &Value) -> Option<Failure> {
    let mut setters = Vec::new();
    let pod = &spec["securityContext"]["runAsNonRoot"];
    if *pod == false {
        setters.push("pod".to_owned());
    }
    let pod_non_root = *pod == true;
    let (mut explicit, mut implicit) = (Vec::new(), Vec::new());
    for c in containers(spec) {
        match &c["securityContext"]["runAsNonRoot"] {
            Value::Bool(false) => explicit.push(name(c)),
            Value::Bool(true) => {}
            _ if !pod_non_root => implicit.push(name(c)),
            _ => {}
        }
    }
    if !explicit.is_empty() {
        setters.push(these_containers(&explicit));
    }
    if !setters.is_empty() {
        return fail(
            "runAsNonRoot != true",
            format!(
                "{} must not set securityContext.runAsNonRoot=false",
                setters.join(" and ")
            ),
        );
    }
    if !implicit.is_empty() {
        return fail(
            "runAsNonRoot != true",
            format!(
                "pod or {} must set securityContext.runAsNonRoot=true",
                these_containers(&implicit)
            ),
        );
    }
    None
}

fn run_as_user(_: &Value, spec: &Value) -> Option<Failure> {
    let root = |sc: &Value| sc["runAsUser"].as_i64() == Some(0);
    let mut setters = Vec::new();
    if root(&spec["securityContext"]) {
        setters.push("pod".to_owned());
    }
    let bad = bad_containers(spec, |c| root(&c["securityContext"]));
    if !bad.is_empty() {
        setters.push(these_containers(&bad));
    }
    if setters.is_empty() {
        return None;
    }
    fail(
        "runAsUser=0",
        format!("{} must not set runAsUser=0", setters.join(" and ")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> Value {
        Value::Object(
            pairs
                .iter()
                .map(|(k, v)| (format!("{PREFIX}{k}"), json!(v)))
                .collect(),
        )
    }

    #[test]
    fn restricted_refuses_a_privileged_pod_with_every_reason_in_order() {
        let pod = json!({"metadata": {"name": "priv"}, "spec": {"hostNetwork": true,
            "containers": [{"name": "c", "image": "busybox", "securityContext": {"privileged": true}}]}});
        let l = labels(&[("enforce", "restricted"), ("enforce-version", "v1.34")]);
        assert_eq!(
            review_pod(&l, &pod).unwrap_err(),
            "violates PodSecurity \"restricted:v1.34\": host namespaces (hostNetwork=true), privileged (container \"c\" must not set securityContext.privileged=true), allowPrivilegeEscalation != false (container \"c\" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or container \"c\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
        );
    }

    #[test]
    fn a_hardened_pod_passes_restricted() {
        let pod = json!({"metadata": {"name": "fine"}, "spec": {
            "securityContext": {"runAsNonRoot": true, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
            "volumes": [{"name": "d", "emptyDir": {}}],
            "containers": [{"name": "c", "image": "busybox",
                "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}}]}});
        let l = labels(&[("enforce", "restricted")]);
        assert_eq!(review_pod(&l, &pod), Ok(vec![]));
    }

    #[test]
    fn warn_level_warns_and_enforce_defaults_warn() {
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "a", "image": "x", "ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 81, "hostPort": 443}]},
            {"name": "b", "image": "x", "securityContext": {"capabilities": {"add": ["SYS_ADMIN", "NET_ADMIN"]}}}]}});
        let l = labels(&[("warn", "baseline"), ("warn-version", "v1.34")]);
        assert_eq!(
            review_pod(&l, &pod).unwrap(),
            [
                "would violate PodSecurity \"baseline:v1.34\": non-default capabilities (container \"b\" must not include \"NET_ADMIN\", \"SYS_ADMIN\" in securityContext.capabilities.add), hostPort (container \"a\" uses hostPorts 443, 8080)"
            ]
        );
        let deploy = json!({"spec": {"template": pod.clone()}});
        let l = labels(&[("enforce", "baseline")]);
        assert_eq!(review_template(&l, "apps", "Deployment", &deploy).len(), 1);
        assert!(review_pod(&l, &pod).is_err());
    }

    #[test]
    fn bad_labels_are_invalid_and_fail_closed() {
        let (p, causes) = policy(&labels(&[
            ("enforce", "strictest"),
            ("warn-version", "1.2"),
        ]));
        assert_eq!(p.enforce.level, Level::Restricted);
        assert_eq!(
            causes[0].message,
            "Invalid value: \"strictest\": must be one of privileged, baseline, restricted"
        );
        assert_eq!(
            causes[0].field,
            "metadata.labels[pod-security.kubernetes.io/enforce]"
        );
        assert_eq!(
            causes[1].field,
            "metadata.labels[pod-security.kubernetes.io/warn-version]"
        );
        assert!(version_valid("v1.0") && version_valid("latest") && !version_valid("v1.02"));
        // An update keeping the same bad labels is not refused again.
        let l = labels(&[("enforce", "strictest")]);
        assert!(namespace_errors(&l, Some(&l)).is_empty());
    }

    #[test]
    fn raising_enforce_names_the_pods_it_would_refuse() {
        let pod = |n: &str| json!({"metadata": {"name": n}, "spec": {"hostPID": true, "containers": [{"name": "c"}]}});
        let warnings = existing_pod_warnings(
            "team",
            &labels(&[("enforce", "baseline")]),
            &json!({}),
            &[pod("b"), pod("a"), pod("c")],
        );
        assert_eq!(
            warnings,
            [
                "existing pods in namespace \"team\" violate the new PodSecurity enforce level \"baseline:latest\"",
                "a (and 2 other pods): host namespaces"
            ]
        );
    }
}
