//! The rest of the model: cluster insights, EKS Anywhere subscriptions, and
//! STS GetCallerIdentity (served on the same port for the clients that ask who
//! they are before talking to EKS, as terraform's provider does).

use actix_web::HttpResponse;
use serde_json::{Value, json};

use crate::error::Error;
use crate::state::Item;
use crate::wire::{Query, epoch, page_response, paginate, paginate_with};
use crate::{Call, Eks, catalog};

/// The insights every cluster shows: (id, name, category, description).
const INSIGHTS: [(&str, &str, &str, &str); 2] = [
    (
        "5b8d3c0a-9d84-4c33-9e1a-0e4e6a9f2b11",
        "Deprecated APIs removed in the next Kubernetes version",
        "UPGRADE_READINESS",
        "Checks for usage of deprecated APIs that are removed in the next minor version.",
    ),
    (
        "c1f0a8f4-6e2d-4b7a-8d51-3a9b7e4c2d90",
        "Cluster health issues",
        "MISCONFIGURATION",
        "Checks for cluster configuration that stops the cluster from working or upgrading.",
    ),
];

fn insight(call: &Call, version: &str, i: &(&str, &str, &str, &str), full: bool) -> Value {
    let next =
        catalog::minor(version).map_or_else(|| version.to_owned(), |m| format!("1.{}", m + 1));
    let mut v = json!({
        "id": i.0,
        "name": i.1,
        "category": i.2,
        "kubernetesVersion": next,
        "lastRefreshTime": epoch(call.now),
        "lastTransitionTime": epoch(call.now),
        "description": i.3,
        "insightStatus": { "status": "PASSING", "reason": "No issues found." },
    });
    if full {
        v["recommendation"] = json!("No action needed.");
        v["additionalInfo"] = json!({});
        v["resources"] = json!([]);
        v["categorySpecificSummary"] =
            json!({ "deprecationDetails": [], "addonCompatibilityDetails": [] });
    }
    v
}

/// ListInsights (filters and paging in the body).
pub fn list_insights(eks: &Eks, call: &Call, cluster: &str) -> Result<Value, Error> {
    let filter = call.body.get("filter").cloned().unwrap_or(json!({}));
    let list = |k: &str| {
        filter
            .get(k)
            .and_then(crate::wire::string_list)
            .unwrap_or_default()
    };
    let (categories, statuses) = (list("categories"), list("statuses"));
    let max = call.body.get("maxResults").map(Value::to_string);
    let token = call.body.str("nextToken").map(str::to_owned);
    eks.with_cluster(call, cluster, |rec, _| {
        let items: Vec<Value> = INSIGHTS
            .iter()
            .filter(|i| categories.is_empty() || categories.iter().any(|c| c == i.2))
            .filter(|_| statuses.is_empty() || statuses.iter().any(|s| s == "PASSING"))
            .map(|i| insight(call, &rec.version, i, false))
            .collect();
        let (page, next) = paginate_with(&items, max.as_deref(), token.as_deref(), 100)?;
        Ok(page_response("insights", page, next))
    })
}

/// DescribeInsight.
pub fn describe_insight(eks: &Eks, call: &Call, cluster: &str, id: &str) -> Result<Value, Error> {
    eks.with_cluster(call, cluster, |rec, _| {
        INSIGHTS
            .iter()
            .find(|i| i.0 == id)
            .map(|i| json!({ "insight": insight(call, &rec.version, i, true) }))
            .ok_or_else(|| Error::ResourceNotFound(format!("No insight found with id: {id}.")))
    })
}

/// StartInsightsRefresh: completes at once.
pub fn start_insights_refresh(eks: &Eks, call: &Call, cluster: &str) -> Result<Value, Error> {
    eks.with_cluster(call, cluster, |_, cs| {
        cs.insights_refreshed = Some(call.now);
        Ok(json!({ "message": "Insights refresh completed.", "status": "COMPLETED" }))
    })
}

/// DescribeInsightsRefresh.
pub fn describe_insights_refresh(eks: &Eks, call: &Call, cluster: &str) -> Result<Value, Error> {
    eks.with_cluster(call, cluster, |rec, cs| {
        let at = cs.insights_refreshed.unwrap_or(rec.created_at);
        Ok(json!({
            "message": "Insights refresh completed.",
            "status": "COMPLETED",
            "startedAt": epoch(at),
            "endedAt": epoch(at),
        }))
    })
}

/// CreateEksAnywhereSubscription.
pub fn create_subscription(eks: &Eks, call: &Call) -> Result<Value, Error> {
    let b = &call.body;
    let name = b.required("name")?.to_owned();
    let term = b
        .get("term")
        .cloned()
        .ok_or_else(|| Error::InvalidParameter("term is required.".into()))?;
    let months = term.get("duration").and_then(Value::as_i64).unwrap_or(12);
    if !(months == 12 || months == 36)
        || term
            .get("unit")
            .and_then(Value::as_str)
            .is_some_and(|u| u != "MONTHS")
    {
        return Err(Error::InvalidParameter(
            "term must be 12 or 36 MONTHS.".into(),
        ));
    }
    let id = format!("{}", uuid::Uuid::new_v4());
    let expires = call.now + chrono::Duration::days(months * 30);
    let obj = json!({
        "id": id,
        "name": name,
        "arn": call.arn(&format!("eks-anywhere-subscription/{id}")),
        "createdAt": epoch(call.now),
        "effectiveDate": epoch(call.now),
        "expirationDate": epoch(expires),
        "licenseQuantity": b.get("licenseQuantity").cloned().unwrap_or(json!(1)),
        "licenseType": b.str("licenseType").unwrap_or("Cluster"),
        "term": term,
        "status": "ACTIVE",
        "autoRenew": b.get("autoRenew").and_then(Value::as_bool).unwrap_or(false),
        "licenseArns": [],
        "licenses": [],
        "tags": b.string_map("tags")?,
    });
    let item = Item::new(obj, None);
    let out = item.value();
    eks.state.subscriptions.lock().insert(id, item);
    Ok(json!({ "subscription": out }))
}

fn in_region(call: &Call, item: &Item) -> bool {
    item.obj
        .get("arn")
        .and_then(Value::as_str)
        .is_some_and(|a| a.starts_with(&call.arn("")))
}

fn subscription_missing(id: &str) -> Error {
    Error::ResourceNotFound(format!("No EKS Anywhere subscription found with id: {id}."))
}

/// DescribeEksAnywhereSubscription.
pub fn describe_subscription(eks: &Eks, call: &Call, id: &str) -> Result<Value, Error> {
    let subs = eks.state.subscriptions.lock();
    subs.get(id)
        .filter(|i| in_region(call, i))
        .map(|i| json!({ "subscription": i.value() }))
        .ok_or_else(|| subscription_missing(id))
}

/// ListEksAnywhereSubscriptions, filtered by `includeStatus`.
pub fn list_subscriptions(eks: &Eks, call: &Call) -> Result<Value, Error> {
    let statuses = call.query.all("includeStatus");
    let items: Vec<Value> = eks
        .state
        .subscriptions
        .lock()
        .values()
        .filter(|i| in_region(call, i))
        .filter(|i| statuses.is_empty() || statuses.iter().any(|s| s == i.status()))
        .map(Item::value)
        .collect();
    let (page, next) = paginate(&items, &call.query, 100)?;
    Ok(page_response("subscriptions", page, next))
}

/// UpdateEksAnywhereSubscription: auto-renewal only.
pub fn update_subscription(eks: &Eks, call: &Call, id: &str) -> Result<Value, Error> {
    let auto = call
        .body
        .get("autoRenew")
        .and_then(Value::as_bool)
        .ok_or_else(|| Error::InvalidParameter("autoRenew is required.".into()))?;
    let mut subs = eks.state.subscriptions.lock();
    let item = subs
        .get_mut(id)
        .filter(|i| in_region(call, i))
        .ok_or_else(|| subscription_missing(id))?;
    item.obj.insert("autoRenew".into(), json!(auto));
    Ok(json!({ "subscription": item.value() }))
}

/// DeleteEksAnywhereSubscription.
pub fn delete_subscription(eks: &Eks, call: &Call, id: &str) -> Result<Value, Error> {
    let mut subs = eks.state.subscriptions.lock();
    if !subs.get(id).is_some_and(|i| in_region(call, i)) {
        return Err(subscription_missing(id));
    }
    let mut item = subs.remove(id).ok_or_else(|| subscription_missing(id))?;
    item.obj.insert("status".into(), json!("DELETING"));
    Ok(json!({ "subscription": item.value() }))
}

/// STS GetCallerIdentity (`Action=GetCallerIdentity` in the form body or the
/// query), answered in STS's XML.
pub fn get_caller_identity(eks: &Eks, call: &Call, body: &[u8]) -> Result<HttpResponse, Error> {
    let form = Query::parse(std::str::from_utf8(body).unwrap_or_default());
    let action = form.get("Action").or(call.query.get("Action"));
    if action != Some("GetCallerIdentity") {
        return Err(Error::UnknownOperation(format!(
            "POST / Action={}",
            action.unwrap_or("(none)")
        )));
    }
    let xml = format!(
        "<GetCallerIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\
<GetCallerIdentityResult><Arn>{arn}</Arn><UserId>{akid}</UserId><Account>{account}</Account></GetCallerIdentityResult>\
<ResponseMetadata><RequestId>{req}</RequestId></ResponseMetadata></GetCallerIdentityResponse>",
        arn = xml_escape(&call.caller),
        akid = xml_escape(&call.access_key),
        account = xml_escape(&eks.settings.account),
        req = uuid::Uuid::new_v4(),
    );
    Ok(HttpResponse::Ok().content_type("text/xml").body(xml))
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
