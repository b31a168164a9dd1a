//! A Job's `podFailurePolicy`, as upstream's `matchPodFailurePolicy` reads it:
//! the first rule that matches a failed Pod decides whether the failure
//! counts against the back-off limits, fails the Job, or fails the Pod's index.

use serde_json::Value;

use crate::controllers::obj;

/// What a Job's `podFailurePolicy` makes of one failed Pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// A `FailJob` rule matched: the Job fails with this message.
    pub fail_job: Option<String>,
    /// Whether the failure counts (`backoffLimit`, `backoffLimitPerIndex`,
    /// `status.failed`); an `Ignore` rule says it does not.
    pub counts: bool,
    /// A `FailIndex` rule matched: the Pod's index fails at once.
    pub fail_index: bool,
}

impl Verdict {
    const COUNTED: Self = Self {
        fail_job: None,
        counts: true,
        fail_index: false,
    };
}

/// The verdict of `policy` (a Job's `spec.podFailurePolicy`, `null` when it has
/// none) on the failed Pod `pod`.
pub fn verdict(policy: &Value, pod: &Value) -> Verdict {
    let Some(rules) = policy["rules"].as_array() else {
        return Verdict::COUNTED;
    };
    for (index, rule) in rules.iter().enumerate() {
        let action = rule["action"].as_str().unwrap_or_default();
        let matched = if rule["onExitCodes"].is_object() {
            matching_container(&pod["status"], &rule["onExitCodes"]).map(|(name, code)| {
                format!(
                    "Container {name} for pod {}/{} failed with exit code {code} matching {action} rule at index {index}",
                    obj::namespace(pod),
                    obj::name(pod),
                )
            })
        } else if let Some(patterns) = rule["onPodConditions"].as_array() {
            matching_condition(&pod["status"], patterns).map(|type_| {
                format!(
                    "Pod {}/{} has condition {type_} matching {action} rule at index {index}",
                    obj::namespace(pod),
                    obj::name(pod),
                )
            })
        } else {
            None
        };
        let Some(message) = matched else {
            continue;
        };
        match action {
            "Ignore" => {
                return Verdict {
                    counts: false,
                    ..Verdict::COUNTED
                };
            }
            "FailIndex" => {
                return Verdict {
                    fail_index: true,
                    ..Verdict::COUNTED
                };
            }
            "Count" => return Verdict::COUNTED,
            "FailJob" => {
                return Verdict {
                    fail_job: Some(message),
                    ..Verdict::COUNTED
                };
            }
            // An action this version does not know matches nothing.
            _ => {}
        }
    }
    Verdict::COUNTED
}

/// The first terminated container (then init container) with a non-zero exit
/// code the requirement matches: its name and code.
fn matching_container<'a>(status: &'a Value, req: &Value) -> Option<(&'a str, i64)> {
    let wanted = req["containerName"].as_str();
    let values: Vec<i64> = req["values"]
        .as_array()
        .map(|v| v.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default();
    let matches = |code: i64| match req["operator"].as_str() {
        Some("In") => values.contains(&code),
        Some("NotIn") => !values.contains(&code),
        _ => false,
    };
    ["containerStatuses", "initContainerStatuses"]
        .iter()
        .flat_map(|f| status[*f].as_array().into_iter().flatten())
        .find_map(|c| {
            let code = c["state"]["terminated"]["exitCode"].as_i64()?;
            let name = c["name"].as_str().unwrap_or_default();
            (wanted.is_none_or(|w| w == name) && code != 0 && matches(code)).then_some((name, code))
        })
}

/// The type of the first Pod condition one of the patterns matches.
fn matching_condition<'a>(status: &'a Value, patterns: &[Value]) -> Option<&'a str> {
    status["conditions"]
        .as_array()?
        .iter()
        .find(|c| {
            patterns.iter().any(|p| {
                p["type"] == c["type"] && p["status"].as_str().unwrap_or("True") == c["status"]
            })
        })
        .and_then(|c| c["type"].as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn failed(code: i64, conditions: Value) -> Value {
        json!({
            "metadata": {"namespace": "ns", "name": "p"},
            "status": {
                "phase": "Failed",
                "conditions": conditions,
                "containerStatuses": [
                    {"name": "ok", "state": {"terminated": {"exitCode": 0}}},
                    {"name": "c", "state": {"terminated": {"exitCode": code}}},
                ],
            },
        })
    }

    #[test]
    fn the_first_matching_rule_decides() {
        let policy = json!({"rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1, 2]}},
            {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [5]}},
        ]});
        let v = verdict(&policy, &failed(2, json!([])));
        assert_eq!(
            v.fail_job.as_deref(),
            Some(
                "Container c for pod ns/p failed with exit code 2 matching FailJob rule at index 1"
            )
        );
        let evicted = failed(2, json!([{"type": "DisruptionTarget", "status": "True"}]));
        assert!(!verdict(&policy, &evicted).counts);
        assert_eq!(verdict(&policy, &failed(7, json!([]))), Verdict::COUNTED);
        // No policy, or nothing matched: the failure counts.
        assert_eq!(
            verdict(&Value::Null, &failed(1, json!([]))),
            Verdict::COUNTED
        );
        assert_eq!(verdict(&policy, &failed(5, json!([]))), Verdict::COUNTED);
    }

    #[test]
    fn exit_code_zero_and_other_containers_never_match() {
        let policy = json!({"rules": [
            {"action": "FailIndex", "onExitCodes": {"containerName": "other", "operator": "In", "values": [1]}},
            {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [1]}},
        ]});
        assert_eq!(verdict(&policy, &failed(1, json!([]))), Verdict::COUNTED);
        let on_c = json!({"rules": [
            {"action": "FailIndex", "onExitCodes": {"containerName": "c", "operator": "In", "values": [1]}},
        ]});
        assert!(verdict(&on_c, &failed(1, json!([]))).fail_index);
    }
}
