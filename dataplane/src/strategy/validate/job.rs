//! Jobs, as upstream's `pkg/apis/batch/validation` checks a JobSpec: counts,
//! completion mode, the per-index back-off limits, the pod failure and pod
//! replacement policies, and a template that restarts on failure or never.

use serde_json::{Value, json};

use super::errors::Errors;
use super::meta::qualified_name;
use super::pods;

/// The most parallelism an Indexed Job may have.
const MAX_PARALLELISM_INDEXED: i64 = 100_000;
/// The most failed indexes an Indexed Job may allow.
const MAX_FAILED_INDEXES: i64 = 100_000;
/// Above this many completions a per-index back-off needs tighter limits.
const COMPLETIONS_SOFT_LIMIT: i64 = 100_000;
/// The parallelism and failed-index limits above [`COMPLETIONS_SOFT_LIMIT`].
const HIGH_COMPLETIONS_LIMIT: i64 = 10_000;
const MAX_RULES: usize = 20;
const MAX_EXIT_CODES: usize = 255;
const MAX_CONDITION_PATTERNS: usize = 20;

/// A Job's spec at `field` (also a CronJob's `jobTemplate.spec`).
pub fn spec(e: &mut Errors, field: &str, spec: &Value) {
    let at = |f: &str| format!("{field}.{f}");
    for f in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ] {
        e.at_least(&at(f), &spec[f], 0);
    }
    let per_index = &spec["backoffLimitPerIndex"];
    let max_failed = &spec["maxFailedIndexes"];
    if !max_failed.is_null() && per_index.is_null() {
        e.required(
            &at("backoffLimitPerIndex"),
            "when maxFailedIndexes is specified",
        );
    }
    let mode = &spec["completionMode"];
    e.one_of(&at("completionMode"), mode, &["NonIndexed", "Indexed"]);
    if mode == "Indexed" {
        indexed(e, field, spec);
    } else if mode.is_null() || mode == "NonIndexed" {
        for (f, v) in [
            ("backoffLimitPerIndex", per_index),
            ("maxFailedIndexes", max_failed),
        ] {
            if !v.is_null() {
                e.invalid(&at(f), v, "requires indexed completion mode");
            }
        }
    }
    let policy = &spec["podFailurePolicy"];
    if !policy.is_null() {
        pod_failure_policy(e, &at("podFailurePolicy"), spec, policy);
    }
    pod_replacement_policy(e, &at("podReplacementPolicy"), spec);
    let t = &spec["template"];
    pods::template(e, &at("template"), t);
    let at = at("template.spec.restartPolicy");
    let restart = &t["spec"]["restartPolicy"];
    match restart.as_str().unwrap_or_default() {
        "" | "Always" => e.required(&at, "valid values: \"OnFailure\", \"Never\""),
        "Never" => {}
        "OnFailure" if !policy.is_null() => e.invalid(
            &at,
            restart,
            "only \"Never\" is supported when podFailurePolicy is specified",
        ),
        "OnFailure" => {}
        _ => e.unsupported(&at, restart, &["OnFailure", "Never"]),
    }
}

/// The limits of an Indexed Job's counts.
fn indexed(e: &mut Errors, field: &str, spec: &Value) {
    let at = |f: &str| format!("{field}.{f}");
    let n = |f: &str| spec[f].as_i64();
    let (completions, parallelism, max_failed) =
        (n("completions"), n("parallelism"), n("maxFailedIndexes"));
    if spec["completions"].is_null() {
        e.required(&at("completions"), "when completion mode is Indexed");
    }
    if let Some(p) = parallelism.filter(|p| *p > MAX_PARALLELISM_INDEXED) {
        e.invalid(
            &at("parallelism"),
            &json!(p),
            &format!(
                "must be less than or equal to {MAX_PARALLELISM_INDEXED} when completion mode is Indexed"
            ),
        );
    }
    if let (Some(c), Some(m)) = (completions, max_failed)
        && m > c
    {
        e.invalid(
            &at("maxFailedIndexes"),
            &json!(m),
            "must be less than or equal to completions",
        );
    }
    if let Some(m) = max_failed.filter(|m| *m > MAX_FAILED_INDEXES) {
        e.invalid(
            &at("maxFailedIndexes"),
            &json!(m),
            &format!("must be less than or equal to {MAX_FAILED_INDEXES}"),
        );
    }
    if completions.is_some_and(|c| c > COMPLETIONS_SOFT_LIMIT)
        && !spec["backoffLimitPerIndex"].is_null()
    {
        let high = format!(
            "must be less than or equal to {HIGH_COMPLETIONS_LIMIT} when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
        );
        if spec["maxFailedIndexes"].is_null() {
            e.required(
                &at("maxFailedIndexes"),
                &format!("must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}"),
            );
        }
        if let Some(p) = parallelism.filter(|p| *p > HIGH_COMPLETIONS_LIMIT) {
            e.invalid(&at("parallelism"), &json!(p), &high);
        }
        if let Some(m) = max_failed.filter(|m| *m > HIGH_COMPLETIONS_LIMIT) {
            e.invalid(&at("maxFailedIndexes"), &json!(m), &high);
        }
    }
}

/// `podFailurePolicy`: at most 20 rules, each with a known action and one
/// requirement, on exit codes or on Pod conditions.
fn pod_failure_policy(e: &mut Errors, field: &str, spec: &Value, policy: &Value) {
    let rules_at = format!("{field}.rules");
    let rules = policy["rules"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if rules.len() > MAX_RULES {
        e.too_many(&rules_at, rules.len(), MAX_RULES);
    }
    let pod = &spec["template"]["spec"];
    let names: Vec<&str> = ["containers", "initContainers"]
        .iter()
        .filter_map(|list| pod[list].as_array())
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .collect();
    for (i, rule) in rules.iter().enumerate() {
        let at = format!("{rules_at}[{i}]");
        let action = &rule["action"];
        let actions = ["Count", "FailIndex", "FailJob", "Ignore"];
        match action.as_str().unwrap_or_default() {
            "" => e.required(
                &format!("{at}.action"),
                "valid values: [\"Count\" \"FailIndex\" \"FailJob\" \"Ignore\"]",
            ),
            "FailIndex" if spec["backoffLimitPerIndex"].is_null() => e.invalid(
                &format!("{at}.action"),
                action,
                "requires the backoffLimitPerIndex to be set",
            ),
            a if !actions.contains(&a) => e.unsupported(&format!("{at}.action"), action, &actions),
            _ => {}
        }
        let on_exit = &rule["onExitCodes"];
        let on_conditions = rule["onPodConditions"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        if !on_exit.is_null() {
            exit_codes(e, &format!("{at}.onExitCodes"), on_exit, &names);
        }
        if !on_conditions.is_empty() {
            condition_patterns(e, &format!("{at}.onPodConditions"), on_conditions);
        }
        match (on_exit.is_null(), on_conditions.is_empty()) {
            (false, false) => e.invalid_whole(
                &at,
                "specifying both OnExitCodes and OnPodConditions is not supported",
            ),
            (true, true) => e.invalid_whole(
                &at,
                "specifying one of OnExitCodes and OnPodConditions is required",
            ),
            _ => {}
        }
    }
}

/// A rule's `onExitCodes`: an operator, a container of the template, and
/// 1–255 distinct exit codes in order (no 0 for `In`).
fn exit_codes(e: &mut Errors, field: &str, req: &Value, names: &[&str]) {
    let operator = &req["operator"];
    let operators = ["In", "NotIn"];
    match operator.as_str().unwrap_or_default() {
        "" => e.required(
            &format!("{field}.operator"),
            "valid values: [\"In\" \"NotIn\"]",
        ),
        o if !operators.contains(&o) => {
            e.unsupported(&format!("{field}.operator"), operator, &operators)
        }
        _ => {}
    }
    if let Some(name) = req["containerName"].as_str()
        && !names.contains(&name)
    {
        e.invalid(
            &format!("{field}.containerName"),
            &req["containerName"],
            "must be one of the container or initContainer names in the pod template",
        );
    }
    let values_at = format!("{field}.values");
    let values: Vec<i64> = req["values"]
        .as_array()
        .map(|vs| vs.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default();
    let go_list = || {
        if req["values"].is_null() {
            return "[]int32(nil)".to_owned();
        }
        let items: Vec<String> = values.iter().map(i64::to_string).collect();
        format!("[]int32{{{}}}", items.join(", "))
    };
    if values.is_empty() {
        e.invalid_whole(
            &values_at,
            &format!("{}: at least one value is required", go_list()),
        );
    } else if values.len() > MAX_EXIT_CODES {
        e.too_many(&values_at, values.len(), MAX_EXIT_CODES);
    }
    for (j, v) in values.iter().enumerate() {
        let at = format!("{values_at}[{j}]");
        if operator == "In" && *v == 0 {
            e.invalid(&at, &json!(v), "must not be 0 for the In operator");
        }
        if values[..j].contains(v) {
            e.duplicate(&at, &json!(v));
        }
    }
    if values.windows(2).any(|w| w[0] > w[1]) {
        e.invalid_whole(&values_at, &format!("{}: must be ordered", go_list()));
    }
}

/// A rule's `onPodConditions`: at most 20 patterns, each a qualified
/// condition type and a status of True, False or Unknown.
fn condition_patterns(e: &mut Errors, field: &str, patterns: &[Value]) {
    if patterns.len() > MAX_CONDITION_PATTERNS {
        e.too_many(field, patterns.len(), MAX_CONDITION_PATTERNS);
    }
    let statuses = ["False", "True", "Unknown"];
    for (j, p) in patterns.iter().enumerate() {
        let at = format!("{field}[{j}]");
        let kind = p["type"].as_str().unwrap_or_default();
        e.invalid_each(&format!("{at}.type"), &p["type"], qualified_name(kind));
        let status = &p["status"];
        match status.as_str().unwrap_or_default() {
            "" => e.required(
                &format!("{at}.status"),
                "valid values: [\"False\" \"True\" \"Unknown\"]",
            ),
            s if !statuses.contains(&s) => {
                e.unsupported(&format!("{at}.status"), status, &statuses)
            }
            _ => {}
        }
    }
}

/// `podReplacementPolicy`: `Failed` or `TerminatingOrFailed`, and only
/// `Failed` beside a pod failure policy.
fn pod_replacement_policy(e: &mut Errors, field: &str, spec: &Value) {
    let policy = &spec["podReplacementPolicy"];
    if spec["podFailurePolicy"].is_null() {
        e.one_of(field, policy, &["Failed", "TerminatingOrFailed"]);
    } else {
        e.one_of(field, policy, &["Failed"]);
    }
}

/// Jobs: the spec, and on update the fields fixed at create (upstream lets
/// a suspended Job's scheduling directives change; kemu compares the pod
/// spec's containers).
pub fn job(e: &mut Errors, o: &Value, old: Option<&Value>) {
    spec(e, "spec", &o["spec"]);
    let Some(old) = old else { return };
    for f in [
        "selector",
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ] {
        e.immutable(&format!("spec.{f}"), &o["spec"][f], &old["spec"][f]);
    }
    let containers = |v: &Value| v["spec"]["template"]["spec"]["containers"].clone();
    if containers(o) != containers(old) {
        e.invalid(
            "spec.template",
            &json!(o["spec"]["template"]),
            "field is immutable",
        );
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::errors::messages;
    use super::*;

    fn job_with(extra: Value) -> Value {
        let mut spec = json!({
            "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox"}]}}
        });
        for (k, v) in extra.as_object().unwrap() {
            spec[k] = v.clone();
        }
        json!({"metadata": {"name": "j"}, "spec": spec})
    }

    #[test]
    fn per_index_limits_need_indexed_mode() {
        let got = messages(
            job,
            job_with(json!({"maxFailedIndexes": 1, "completions": 2})),
            None,
        );
        assert_eq!(
            got,
            [
                "spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified",
                "spec.maxFailedIndexes: Invalid value: 1: requires indexed completion mode",
            ]
        );
        let got = messages(
            job,
            job_with(json!({"completionMode": "Indexed", "completions": 2,
                "backoffLimitPerIndex": 0, "maxFailedIndexes": 3})),
            None,
        );
        assert_eq!(
            got,
            ["spec.maxFailedIndexes: Invalid value: 3: must be less than or equal to completions"]
        );
    }

    #[test]
    fn pod_failure_policy_rules() {
        let rules = json!({"rules": [
            {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [0, 3, 3, 1],
                "containerName": "other"}},
            {"action": "Restart", "onPodConditions": [{"type": "DisruptionTarget"}]},
            {"action": "Ignore"},
        ]});
        let got = messages(
            job,
            job_with(
                json!({"podFailurePolicy": rules, "podReplacementPolicy": "TerminatingOrFailed"}),
            ),
            None,
        );
        assert_eq!(
            got,
            [
                "spec.podFailurePolicy.rules[0].action: Invalid value: \"FailIndex\": requires the backoffLimitPerIndex to be set",
                "spec.podFailurePolicy.rules[0].onExitCodes.containerName: Invalid value: \"other\": must be one of the container or initContainer names in the pod template",
                "spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator",
                "spec.podFailurePolicy.rules[0].onExitCodes.values[2]: Duplicate value: 3",
                "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: []int32{0, 3, 3, 1}: must be ordered",
                "spec.podFailurePolicy.rules[1].action: Unsupported value: \"Restart\": supported values: \"Count\", \"FailIndex\", \"FailJob\", \"Ignore\"",
                "spec.podFailurePolicy.rules[1].onPodConditions[0].status: Required value: valid values: [\"False\" \"True\" \"Unknown\"]",
                "spec.podFailurePolicy.rules[2]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required",
                "spec.podReplacementPolicy: Unsupported value: \"TerminatingOrFailed\": supported values: \"Failed\"",
            ]
        );
    }

    #[test]
    fn on_failure_restarts_conflict_with_a_pod_failure_policy() {
        let mut o = job_with(json!({"podFailurePolicy": {"rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}}));
        o["spec"]["template"]["spec"]["restartPolicy"] = json!("OnFailure");
        assert_eq!(
            messages(job, o, None),
            [
                "spec.template.spec.restartPolicy: Invalid value: \"OnFailure\": only \"Never\" is supported when podFailurePolicy is specified"
            ]
        );
    }

    #[test]
    fn policies_are_fixed_at_create() {
        let old = job_with(
            json!({"completionMode": "Indexed", "completions": 2, "backoffLimitPerIndex": 1}),
        );
        let mut new = old.clone();
        new["spec"]["backoffLimitPerIndex"] = json!(2);
        assert_eq!(
            messages(job, new, Some(old)),
            ["spec.backoffLimitPerIndex: Invalid value: 2: field is immutable"]
        );
    }
}
