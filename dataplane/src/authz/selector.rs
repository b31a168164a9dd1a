//! `metav1.LabelSelector` matching (matchLabels and matchExpressions), for
//! ClusterRole aggregation and quota/limit scopes.

use serde_json::Value;

/// Whether `labels` (a JSON object of strings) satisfies `selector`, as
/// `metav1.LabelSelectorAsSelector`: an empty selector matches everything;
/// an invalid one (unknown operator) matches nothing.
pub fn matches(selector: &Value, labels: &Value) -> bool {
    let label = |k: &str| labels.get(k).and_then(Value::as_str);
    if let Some(ml) = selector.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in ml {
            if label(k) != v.as_str() {
                return false;
            }
        }
    }
    let Some(exprs) = selector.get("matchExpressions").and_then(Value::as_array) else {
        return true;
    };
    exprs.iter().all(|e| {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        let values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let have = label(key);
        match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" => have.is_some_and(|h| values.contains(&h)),
            "NotIn" => have.is_none_or(|h| !values.contains(&h)),
            "Exists" => have.is_some(),
            "DoesNotExist" => have.is_none(),
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors() {
        let l = json!({"a":"1","b":"2"});
        assert!(matches(&json!({}), &l));
        assert!(matches(&json!({"matchLabels":{"a":"1"}}), &l));
        assert!(!matches(&json!({"matchLabels":{"a":"2"}}), &l));
        assert!(matches(
            &json!({"matchExpressions":[{"key":"b","operator":"In","values":["2","3"]}]}),
            &l
        ));
        assert!(!matches(
            &json!({"matchExpressions":[{"key":"b","operator":"NotIn","values":["2"]}]}),
            &l
        ));
        assert!(matches(
            &json!({"matchExpressions":[{"key":"c","operator":"NotIn","values":["2"]}]}),
            &l
        ));
        assert!(matches(
            &json!({"matchExpressions":[{"key":"a","operator":"Exists"}]}),
            &l
        ));
        assert!(matches(
            &json!({"matchExpressions":[{"key":"z","operator":"DoesNotExist"}]}),
            &l
        ));
        assert!(!matches(
            &json!({"matchExpressions":[{"key":"a","operator":"Bogus"}]}),
            &l
        ));
    }
}
