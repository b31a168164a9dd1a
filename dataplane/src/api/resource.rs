//! The generic verbs on every resource type: get, list, watch, create, update,
//! patch, delete, deletecollection, and the `status` and `scale` subresources
//! (the others: [`crate::api::subresources`]).
//! Generic over the [`ResourceRegistry`](crate::resources::ResourceRegistry):
//! no per-kind handler code.

use parking_lot::Mutex;
use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::{HttpMessage, HttpRequest, HttpResponse, ResponseError, web};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use crate::api::admission::Admission;
use crate::api::delete;
use crate::api::field_validation::{self, Checked, Directive};
use crate::api::go_types;
use crate::api::openapi;
use crate::api::options::{self, OptionsKind};
use crate::api::patch::{self, PatchType};
use crate::api::request::{self, Output, Params, Scope};
use crate::api::selectors::{FieldSelector, LabelSelector};
use crate::api::subresources;
use crate::api::table;
use crate::api::validation;
use crate::api::watch::{self, Filter, WatchRequest};
use crate::api::wire;
use crate::authz::admission::Operation as Admit;
use crate::engine::{ClusterContext, Engine};
use crate::error::{ApiError, Cause};
use crate::resources::ResourceType;
use crate::resources::strategy::{self as custom_strategy, UnknownFields};
use crate::store::{DryRun, ObjectKey, Preconditions, Store, Stored, WatchFrom, generate_name};
use crate::strategy;

mod fields;

pub(crate) use fields::manager as field_manager;

/// One object of a list's answer.
enum Item {
    /// Decoded (it was, or a selector had to read it).
    Value(Arc<Value>),
    /// Its JSON as stored, written as it is.
    Json(bytes::Bytes),
}

impl Item {
    fn value(&self) -> Arc<Value> {
        match self {
            Item::Value(v) => v.clone(),
            Item::Json(json) => Arc::new(serde_json::from_slice(json).unwrap_or(Value::Null)),
        }
    }
}

/// One variant per operation the generic handler serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operation {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch(PatchType),
    Delete,
    DeleteCollection,
    GetSubresource(Sub),
    UpdateSubresource(Sub),
    PatchSubresource(Sub, PatchType),
}

/// The subresources served generically.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sub {
    /// `status`: the whole object; writes change only `.status`.
    Status,
    /// `scale`: an `autoscaling/v1` Scale view of `.spec.replicas`.
    Scale,
    /// A Namespace's `finalize`: PUT only; writes all but `.status`.
    Finalize,
    /// A CertificateSigningRequest's `approval`: the whole object; writes
    /// change only `.status.conditions`.
    Approval,
}

impl Sub {
    /// The subresource's name in the URL and in `managedFields`.
    fn name(self) -> &'static str {
        match self {
            Sub::Status => "status",
            Sub::Scale => "scale",
            Sub::Finalize => "finalize",
            Sub::Approval => "approval",
        }
    }
}

impl Operation {
    /// The verb an operation needs in the type's verb list.
    fn verb(self) -> &'static str {
        match self {
            Operation::Get | Operation::GetSubresource(_) => "get",
            Operation::List => "list",
            Operation::Watch => "watch",
            Operation::Create => "create",
            Operation::Update | Operation::UpdateSubresource(_) => "update",
            Operation::Patch(_) | Operation::PatchSubresource(..) => "patch",
            Operation::Delete => "delete",
            Operation::DeleteCollection => "deletecollection",
        }
    }

    /// The options object the verb takes (`dryRun`, `fieldValidation`).
    fn options_kind(self) -> Option<OptionsKind> {
        match self {
            Operation::Create => Some(OptionsKind::Create),
            Operation::Update | Operation::UpdateSubresource(_) => Some(OptionsKind::Update),
            Operation::Patch(_) | Operation::PatchSubresource(..) => Some(OptionsKind::Patch),
            Operation::Delete | Operation::DeleteCollection => Some(OptionsKind::Delete),
            Operation::Get | Operation::List | Operation::Watch | Operation::GetSubresource(_) => {
                None
            }
        }
    }
}

fn route(req: &HttpRequest, scope: &Scope, params: &Params) -> Result<Operation, ApiError> {
    let method = req.method().as_str();
    let patch_type = || {
        let ct = request::header(req, "content-type");
        match PatchType::from_content_type(ct) {
            // Custom resources have no Go struct to carry patch strategies.
            Some(PatchType::StrategicMerge) if scope.rt.custom.is_some() => Err(
                ApiError::UnsupportedMediaType(patch::ACCEPTED_CUSTOM.into()),
            ),
            Some(kind) => Ok(kind),
            None => Err(ApiError::UnsupportedMediaType(patch::ACCEPTED.into())),
        }
    };
    let sub = match scope.subresource.as_deref() {
        None => None,
        Some("status") if has_sub(&scope.rt, "status") => Some(Sub::Status),
        Some("scale") if has_sub(&scope.rt, "scale") => Some(Sub::Scale),
        Some("approval") if has_sub(&scope.rt, "approval") => Some(Sub::Approval),
        Some("finalize") if has_sub(&scope.rt, "finalize") => {
            if method != "PUT" {
                return Err(ApiError::MethodNotAllowed);
            }
            Some(Sub::Finalize)
        }
        Some(_) => return Err(ApiError::NotFound),
    };
    let op = match (method, scope.name.is_some(), sub) {
        ("GET", false, _) if params.flag("watch") => Operation::Watch,
        ("GET", false, _) => Operation::List,
        ("GET", true, None) if params.flag("watch") => Operation::Watch,
        ("GET", true, None) => Operation::Get,
        ("GET", true, Some(s)) => Operation::GetSubresource(s),
        ("POST", false, _) => Operation::Create,
        ("PUT", true, None) => Operation::Update,
        ("PUT", true, Some(s)) => Operation::UpdateSubresource(s),
        ("PATCH", true, None) => Operation::Patch(patch_type()?),
        ("PATCH", true, Some(s)) => Operation::PatchSubresource(s, patch_type()?),
        ("DELETE", true, None) => Operation::Delete,
        ("DELETE", false, _) => Operation::DeleteCollection,
        _ => return Err(ApiError::MethodNotAllowed),
    };
    if scope.rt.namespaced
        && scope.namespace.is_none()
        && matches!(op, Operation::Create | Operation::DeleteCollection)
    {
        // Namespaced objects are created and collection-deleted inside a namespace.
        return Err(ApiError::MethodNotAllowed);
    }
    let allowed = match sub {
        None => scope.rt.verbs.iter().any(|v| v == op.verb()),
        Some(_) => true,
    };
    if !allowed {
        return Err(ApiError::MethodNotAllowed);
    }
    Ok(op)
}

fn has_sub(rt: &ResourceType, name: &str) -> bool {
    rt.subresources.iter().any(|s| s.name == name)
}

/// Every request under `/api/v1/…` and `/apis/{group}/{version}/…`.
pub async fn dispatch(
    req: HttpRequest,
    payload: web::Payload,
    engine: web::Data<Engine>,
    cluster: web::Data<ClusterContext>,
) -> Result<HttpResponse, ApiError> {
    let group = req.match_info().get("group").unwrap_or_default();
    let version = req.match_info().get("version").unwrap_or("v1");
    let path = req.match_info().get("path").unwrap_or_default();
    // The deprecated `/watch/` paths still watch, as upstream serves them.
    let (path, legacy_watch) = match path.strip_prefix("watch/") {
        Some(rest) => (rest, true),
        None => (path, false),
    };
    let scope = request::parse_path(&engine.resources_of(&cluster.id), group, version, path)?;
    let mut store = engine
        .store(&cluster.id)
        .ok_or_else(|| ApiError::ClusterGone(cluster.id.clone()))?;
    let mut params = Params::parse(req.query_string())?;
    if legacy_watch {
        if req.method() != actix_web::http::Method::GET || scope.subresource.is_some() {
            return Err(ApiError::NotFound);
        }
        params = params.with("watch", "true");
    }
    if let Some(handler) = subresources::handler(&scope) {
        // A proxied query is the backend's.
        let dry_run = (handler != subresources::Handler::Proxy)
            .then(|| params.get("dryRun"))
            .flatten();
        match dry_run {
            None => {}
            Some("All") => store = Arc::new(DryRun(store, engine.registry().clock().clone())),
            Some(other) => {
                return Err(ApiError::BadRequest(format!(
                    "dryRun: Unsupported value: \"{other}\": supported values: \"All\""
                )));
            }
        }
        return Ok(subresources::serve(handler, req, payload, scope, store, params).await);
    }
    let op = route(&req, &scope, &params)?;
    let mut directive = Directive::Warn;
    // DELETE reads dryRun from its DeleteOptions (body or query) itself.
    if let Some(kind) = op.options_kind().filter(|k| *k != OptionsKind::Delete) {
        if options::dry_run_query(&params, kind)? {
            store = Arc::new(DryRun(store, engine.registry().clock().clone()));
        }
        directive = Directive::parse(&params, kind)?;
    }
    let output = match request::negotiate(&req, &params) {
        Ok(output) => output,
        // A request for a view is refused in the view's (indented) form.
        Err(e) if request::header(&req, "accept").contains("as=") => return Ok(indented(&e)),
        Err(e) => return Err(e),
    };
    let user = req
        .extensions()
        .get::<kemu_shared::UserInfo>()
        .cloned()
        .unwrap_or_default();
    let h = Handler {
        engine: &engine,
        network: engine.network(&cluster.id),
        field_manager: fields::manager(&params, request::header(&req, "user-agent")),
        user,
        store,
        scope,
        params,
        output,
        directive,
        warnings: Mutex::default(),
    };
    let body = match op {
        Operation::Create
        | Operation::Update
        | Operation::Patch(_)
        | Operation::UpdateSubresource(_)
        | Operation::PatchSubresource(..)
        | Operation::Delete
        | Operation::DeleteCollection => request::read_body(payload).await?,
        _ => Vec::new(),
    };
    let ct = request::header(&req, "content-type");
    tracing::debug!(?op, resource = %h.scope.resource(), name = ?h.scope.name, "request");
    let deprecation = h.rt().deprecation_warning();
    let view = matches!(h.output, Output::Table(_) | Output::Metadata(_));
    let answer = match op {
        Operation::Get => h.get(),
        Operation::List => {
            options::check_list(&h.params, false)?;
            h.list()
        }
        Operation::Watch => {
            options::check_list(&h.params, true)?;
            h.watch()
        }
        Operation::Create => h.create(h.decode(ct, &body).await?).await,
        Operation::Update => h.update(h.decode(ct, &body).await?).await,
        Operation::Patch(kind) => h.patch(kind, &body).await,
        Operation::Delete => h.delete(ct, &body).await,
        Operation::DeleteCollection => h.delete_collection(ct, &body).await,
        Operation::GetSubresource(sub) => h.get_sub(sub),
        Operation::UpdateSubresource(sub) => {
            h.update_sub(sub, request::decode_object(ct, &body)?).await
        }
        Operation::PatchSubresource(sub, kind) => h.patch_sub(sub, kind, &body).await,
    };
    // The store names what it holds; errors name the resource asked for
    // (an events.k8s.io Event is stored as a core one).
    let answer = answer.map_err(|e| h.named_as_requested(e));
    // A view's errors are written indented, as upstream writes them.
    let answer = match answer {
        Err(e) if view => Ok(indented(&e)),
        other => other,
    };
    // A DELETE's warnings come before it looks anything up, so its
    // failures carry them.
    let answer = match answer {
        Err(e) if op == Operation::Delete && !h.warnings.lock().is_empty() => {
            let mut resp = e.error_response();
            for w in h.warnings.lock().iter() {
                let value = field_validation::warning_header(w);
                if let Ok(value) = actix_web::http::header::HeaderValue::from_str(&value) {
                    resp.headers_mut()
                        .append(actix_web::http::header::WARNING, value);
                }
            }
            Ok(resp)
        }
        other => other,
    };
    let Some(warning) = deprecation else {
        return answer;
    };
    // Errors too carry the deprecation warning.
    let mut resp = answer.unwrap_or_else(|e| e.error_response());
    let value = field_validation::warning_header(warning);
    if let Ok(value) = actix_web::http::header::HeaderValue::from_str(&value) {
        let warnings = resp.headers_mut();
        let others: Vec<_> = warnings.get_all("warning").cloned().collect();
        warnings.remove("warning");
        warnings.append(actix_web::http::header::WARNING, value);
        for other in others {
            warnings.append(actix_web::http::header::WARNING, other);
        }
    }
    Ok(resp)
}

struct Handler<'a> {
    engine: &'a Engine,
    /// The cluster's networking, for the kinds' strategies.
    network: Option<Arc<crate::network::ClusterNetwork>>,
    /// Who the request is served as (after impersonation).
    user: kemu_shared::UserInfo,
    /// The field manager writes are recorded as.
    field_manager: String,
    store: Arc<dyn Store>,
    scope: Scope,
    params: Params,
    output: Output,
    /// `fieldValidation`.
    directive: Directive,
    /// `Warning` headers for the response.
    warnings: Mutex<Vec<String>>,
}

/// A `continue` token: where the next page starts in which snapshot.
#[derive(serde::Serialize, serde::Deserialize)]
struct Continue {
    v: String,
    rv: u64,
    ns: String,
    name: String,
}

impl Handler<'_> {
    fn rt(&self) -> &ResourceType {
        &self.scope.rt
    }

    fn strategy(&self) -> strategy::Context<'_> {
        strategy::Context {
            store: self.store.as_ref(),
            network: self.network.as_deref(),
            namespace: self.scope.namespace.as_deref().unwrap_or_default(),
            user: Some(&self.user),
            now: self.engine.registry().clock().now(),
        }
    }

    fn key(&self) -> Result<ObjectKey, ApiError> {
        let name = self
            .scope
            .name
            .as_deref()
            .ok_or(ApiError::MethodNotAllowed)?;
        Ok(ObjectKey::new(
            &self.scope.resource(),
            self.scope.namespace.as_deref().unwrap_or_default(),
            name,
        ))
    }

    fn not_found(&self, key: &ObjectKey) -> ApiError {
        ApiError::ObjectNotFound(crate::error::Target {
            name: key.name.clone(),
            group: self.rt().group.clone(),
            kind: self.rt().plural.clone(),
        })
    }

    /// `e` with its target in this request's group, when the store keeps
    /// the type under another.
    fn named_as_requested(&self, e: ApiError) -> ApiError {
        let rt = self.rt();
        let rename = |mut t: crate::error::Target| {
            if t.group != rt.group && t.kind == rt.plural {
                t.group = rt.group.clone();
            }
            t
        };
        match e {
            ApiError::AlreadyExists(t) => ApiError::AlreadyExists(rename(t)),
            ApiError::ObjectNotFound(t) => ApiError::ObjectNotFound(rename(t)),
            ApiError::Conflict { target, message } => ApiError::Conflict {
                target: rename(target),
                message,
            },
            other => other,
        }
    }

    fn current(&self, key: &ObjectKey) -> Result<Arc<Value>, ApiError> {
        self.stored(key).ok_or_else(|| self.not_found(key))
    }

    /// The object at `key` as this request's version shows it (types that
    /// share another's storage or convert are changed in their own form).
    fn stored(&self, key: &ObjectKey) -> Option<Arc<Value>> {
        let object = self.store.get(key)?;
        if !custom_strategy::converts(self.rt()) {
            return Some(object);
        }
        match custom_strategy::present(self.rt(), &object) {
            Cow::Borrowed(_) => Some(object),
            Cow::Owned(o) => Some(Arc::new(o)),
        }
    }

    /// Upstream's validation of the kind: a 422 with its causes.
    fn validate(&self, object: &Value, old: Option<&Value>) -> Result<(), ApiError> {
        let causes = strategy::validate::validate(self.rt(), object, old);
        if causes.is_empty() {
            let warnings = strategy::validate::warnings(self.rt(), object);
            self.warnings.lock().extend(warnings);
            return Ok(());
        }
        Err(self.invalid(object, causes))
    }

    /// The 422 of `object` with `causes`.
    fn invalid(&self, object: &Value, causes: Vec<Cause>) -> ApiError {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        validation::invalid_object(self.rt(), name, causes)
    }

    /// What upstream's decoder makes of a body: the Go types' omissions, then
    /// the kind's defaults.
    fn as_decoded(&self, object: &mut Value) {
        go_types::strip(&self.rt().definition, object);
        strategy::defaults(self.rt(), object);
    }

    /// Records an Update on `new`, already in its stored form: converting
    /// types are tracked in the request's form, as their managers wrote them.
    fn track_stored(&self, old: Option<&Value>, new: &mut Value) {
        if !custom_strategy::converts(self.rt()) {
            return self.track(old, new);
        }
        let mut shown = custom_strategy::present(self.rt(), new).into_owned();
        self.track(old, &mut shown);
        new["metadata"]["managedFields"] = shown["metadata"]["managedFields"].take();
    }

    /// Writes one object in the negotiated format.
    fn respond(&self, status: StatusCode, object: &Value) -> Result<HttpResponse, ApiError> {
        let object = &*custom_strategy::present(self.rt(), object);
        let body = match self.output {
            Output::Json => object.clone(),
            Output::Metadata(m) => {
                m.check(self.rt(), false)?;
                m.of(object)
            }
            Output::Table(include) => table::render(
                self.rt(),
                std::slice::from_ref(object),
                include,
                json!({ "resourceVersion": object["metadata"]["resourceVersion"] }),
                self.engine.registry().clock().now(),
            ),
        };
        Ok(wire::respond(self.reply(status), &body))
    }

    /// A response builder carrying the request's warnings.
    fn reply(&self, status: StatusCode) -> actix_web::HttpResponseBuilder {
        let mut b = HttpResponse::build(status);
        for w in self.warnings.lock().iter() {
            b.append_header(("Warning", field_validation::warning_header(w)));
        }
        b
    }

    /// Unknown or duplicate fields found: rejected, warned about or ignored
    /// as `fieldValidation` says.
    fn field_problems(
        &self,
        checked: Checked,
        strict: impl FnOnce(&Value, &[String]) -> ApiError,
    ) -> Result<Value, ApiError> {
        if checked.problems.is_empty() {
            return Ok(checked.value);
        }
        match self.directive {
            Directive::Strict => Err(strict(&checked.value, &checked.problems)),
            Directive::Warn => {
                self.warnings.lock().extend(checked.problems);
                Ok(checked.value)
            }
            Directive::Ignore => Ok(checked.value),
        }
    }

    /// A YAML body's duplicate keys as field problems: one go-yaml error
    /// naming them all when refused, one warning each when warned of.
    fn yaml_problems(&self, dups: Vec<String>) -> Vec<String> {
        match (self.directive, dups.is_empty()) {
            (_, true) | (Directive::Ignore, _) => Vec::new(),
            (Directive::Strict, false) => {
                vec![format!("yaml: unmarshal errors:\n  {}", dups.join("\n  "))]
            }
            (Directive::Warn, false) => dups,
        }
    }

    /// Decodes a create or update body, checking its fields.
    async fn decode(&self, ct: &str, body: &[u8]) -> Result<Value, ApiError> {
        let ct = ct.to_owned();
        let schema = self.rt().field_schema();
        let (mut checked, dups) = request::parse_off_worker(body, move |body| {
            let media = ct.split(';').next().unwrap_or_default().trim();
            if matches!(media, "" | "application/json" | "*/*") {
                return match field_validation::parse_json(body, &schema) {
                    Ok(c) => Ok((c, Vec::new())),
                    // Malformed: the decoder's own 400.
                    Err(_) => request::decode_json(body).map(|value| {
                        let problems = Vec::new();
                        (Checked { value, problems }, Vec::new())
                    }),
                };
            }
            let checked =
                field_validation::check_value(request::decode_object(&ct, body)?, &schema);
            let dups = if media == "application/yaml" {
                field_validation::yaml_duplicates(body)
            } else {
                Vec::new()
            };
            Ok((checked, dups))
        })
        .await?;
        checked.problems.splice(0..0, self.yaml_problems(dups));
        self.field_problems(checked, |v, p| {
            field_validation::decode_error(self.rt(), v, p)
        })
    }

    /// Upstream forbids adding finalizers to an object being deleted.
    fn check_finalizers(&self, next: &Value, current: &Value) -> Result<(), ApiError> {
        if !current["metadata"]["deletionTimestamp"].is_string() {
            return Ok(());
        }
        let list = |v: &Value| -> Vec<String> {
            v["metadata"]["finalizers"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|f| f.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        let old = list(current);
        let mut new: Vec<String> = list(next)
            .into_iter()
            .filter(|f| !old.contains(f))
            .collect();
        if new.is_empty() {
            return Ok(());
        }
        new.sort();
        new.dedup();
        let quoted: Vec<String> = new.iter().map(|f| options::go_quote(f)).collect();
        Err(validation::invalid(
            self.rt(),
            current["metadata"]["name"].as_str().unwrap_or_default(),
            "metadata.finalizers",
            "FieldValueForbidden",
            format!(
                "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                quoted.join(", ")
            ),
        ))
    }

    fn filter(&self) -> Result<Filter, ApiError> {
        let rt = self.rt();
        let selectable = rt.custom.as_ref().map(|c| c.selectable.as_slice());
        let mut fields = FieldSelector::parse_with(
            self.params.get("fieldSelector").unwrap_or_default(),
            &rt.group,
            &rt.kind,
            selectable,
        )?;
        if let Some(name) = &self.scope.name {
            // `GET …/pods/web?watch=true` watches one object.
            fields = FieldSelector::parse(&format!("metadata.name={name}"), "", "")?;
        }
        Ok(Filter {
            namespace: self.scope.namespace.clone(),
            labels: LabelSelector::parse(self.params.get("labelSelector").unwrap_or_default())?,
            fields,
        })
    }

    fn get(&self) -> Result<HttpResponse, ApiError> {
        let key = self.key()?;
        if self.serves_stored_json()
            && let Some(Stored::Encoded(packed)) = self.store.get_stored(&key)
        {
            // The stored bytes are the answer's: nothing to decode or encode.
            let mut body = packed.json().to_vec();
            body.push(b'\n');
            return Ok(self
                .reply(StatusCode::OK)
                .content_type("application/json")
                .body(body));
        }
        let object = self.current(&key)?;
        self.respond(StatusCode::OK, &object)
    }

    /// Whether this request's answer is the stored JSON itself: the plain
    /// JSON view of a built-in type served as stored.
    fn serves_stored_json(&self) -> bool {
        let rt = self.rt();
        matches!(self.output, Output::Json) && rt.custom.is_none() && !custom_strategy::converts(rt)
    }

    fn list(&self) -> Result<HttpResponse, ApiError> {
        let filter = self.filter()?;
        let resource = self.scope.resource();
        let limit = self.params.number("limit")?.filter(|l| *l > 0);
        let (snapshot, after) = match self.params.get("continue") {
            Some(token) => {
                let c = decode_continue(token)?;
                // resourceVersion 0: the inconsistent continuation of a
                // token that expired, from the same key at the latest.
                let snapshot = if c.rv == 0 {
                    self.store.snapshot(&resource)
                } else {
                    self.store
                        .snapshot_at(&resource, c.rv)
                        .map_err(|e| match e {
                            ApiError::Gone(message) => ApiError::ContinueExpired(
                                message,
                                encode_continue(0, &c.ns, &c.name),
                            ),
                            other => other,
                        })?
                };
                (snapshot, Some((c.ns, c.name)))
            }
            None => (self.store.snapshot(&resource), None),
        };
        let ns = filter.namespace.as_deref();
        // Objects kept encoded go out as stored unless a selector must read them.
        let raw = self.serves_stored_json() && filter.labels.is_empty() && filter.fields.is_empty();
        let mut items: Vec<Item> = Vec::new();
        let mut last = None;
        let mut rest = snapshot.iter_stored(ns, after.as_ref());
        for (k, stored) in rest.by_ref() {
            match stored {
                Stored::Encoded(packed) if raw => items.push(Item::Json(packed.json())),
                _ => match filter.admits(stored) {
                    Some(o) => items.push(Item::Value(o)),
                    None => continue,
                },
            }
            last = Some(k);
            if limit.is_some_and(|l| items.len() as u64 >= l) {
                break;
            }
        }
        let remaining = rest.filter(|(k, s)| filter.covers(&k.0, s)).count();
        let mut meta = json!({ "resourceVersion": snapshot.rv.to_string() });
        if remaining > 0
            && let Some((ns, name)) = last
        {
            meta["continue"] = json!(encode_continue(snapshot.rv, ns, name));
            if filter.labels.is_empty() && filter.fields.is_empty() {
                meta["remainingItemCount"] = json!(remaining);
            }
            self.store.retain_snapshot(&resource, &snapshot);
        }
        let rt = self.rt();
        match self.output {
            Output::Metadata(m) => {
                m.check(rt, true)?;
                let items: Vec<Value> = items
                    .iter()
                    .map(|o| m.of(&custom_strategy::present(rt, &o.value())))
                    .collect();
                // Go's nil slice: an empty list's items are null.
                let items = if items.is_empty() {
                    Value::Null
                } else {
                    json!(items)
                };
                let list = json!({ "kind": "PartialObjectMetadataList",
                    "apiVersion": m.api_version(), "metadata": meta, "items": items });
                Ok(wire::respond(HttpResponse::Ok(), &list))
            }
            Output::Table(include) => {
                let objects: Vec<Value> = items
                    .iter()
                    .map(|o| custom_strategy::present(rt, &o.value()).into_owned())
                    .collect();
                let now = self.engine.registry().clock().now();
                Ok(wire::respond(
                    HttpResponse::Ok(),
                    &table::render(rt, &objects, include, meta, now),
                ))
            }
            Output::Json => {
                // Written by hand so a large list is serialized once, item by item.
                let mut body = Vec::with_capacity(256 + items.len() * 512);
                // The list as the wire writes it, its items cut off to be
                // written one by one.
                let mut meta = meta;
                if rt.custom.is_some() && meta["continue"].is_null() {
                    // An unstructured list always sets its continue token.
                    meta["continue"] = json!("");
                }
                let head = json!({ "kind": rt.list_kind, "apiVersion": rt.api_version(),
                    "metadata": meta, "items": [] });
                let head = wire::to_vec(&head);
                // Typed lists end with their items, custom resources' sort
                // them before `kind`: split where the empty items are.
                const EMPTY: &[u8] = b"\"items\":[]";
                let at =
                    memchr::memmem::find(&head, EMPTY).map_or(head.len(), |i| i + EMPTY.len() - 1);
                let (before, after) = head.split_at(at);
                body.extend_from_slice(before);
                for (i, o) in items.iter().enumerate() {
                    if i > 0 {
                        body.push(b',');
                    }
                    let o = match o {
                        Item::Json(json) if wire::write_list_item_json(&mut body, json) => {
                            continue;
                        }
                        other => other.value(),
                    };
                    let item = custom_strategy::present(rt, &o);
                    if rt.custom.is_some() {
                        wire::write(&mut body, &item);
                    } else {
                        wire::write_list_item(&mut body, &item);
                    }
                }
                body.extend_from_slice(after);
                body.push(b'\n');
                Ok(HttpResponse::Ok()
                    .content_type("application/json")
                    .body(body))
            }
        }
    }

    fn watch(&self) -> Result<HttpResponse, ApiError> {
        let filter = self.filter()?;
        let rv = self.params.get("resourceVersion");
        let send_initial = self.params.get("sendInitialEvents").map(|v| v == "true");
        let (from, initial_events) =
            match (rv, send_initial) {
                (_, Some(true)) => (WatchFrom::Now, true),
                (None | Some("0"), Some(false)) => {
                    (WatchFrom::After(self.store.resource_version()), false)
                }
                (None | Some("0"), None) => (WatchFrom::Now, true),
                (Some(v), _) => (
                    WatchFrom::After(v.parse().map_err(|_| {
                        ApiError::BadRequest(format!("invalid resource version: {v}"))
                    })?),
                    false,
                ),
            };
        let (table, metadata) = match self.output {
            Output::Table(include) => (Some(include), None),
            Output::Metadata(m) => (None, Some(m)),
            Output::Json => (None, None),
        };
        let req = WatchRequest {
            rt: self.scope.rt.clone(),
            resource: self.scope.resource(),
            filter,
            from,
            initial_events,
            send_initial_events: send_initial == Some(true),
            bookmarks: self.params.flag("allowWatchBookmarks"),
            timeout: self
                .params
                .number("timeoutSeconds")?
                .map(std::time::Duration::from_secs),
            table,
            metadata,
        };
        Ok(watch::serve(
            self.store.clone(),
            self.engine.registry().clock().clone(),
            req,
        ))
    }

    /// Checks a body's type meta and namespace against the request, then
    /// gives it the request's namespace (upstream's `BeforeCreate` does, so
    /// strategies see where the object lives).
    fn check_body(&self, body: &mut Value) -> Result<(), ApiError> {
        let rt = self.rt();
        validation::check_type_meta(rt, body, &rt.kind, &rt.api_version())?;
        if let Some(why) = go_types::type_error(&rt.definition, body) {
            return Err(field_validation::decode_failure(rt, body, &why));
        }
        validation::check_namespace(body, self.scope.namespace.as_deref())?;
        if let Some(ns) = &self.scope.namespace
            && body["metadata"].is_object()
        {
            body["metadata"]["namespace"] = json!(ns);
        }
        Ok(())
    }

    /// The admission chain of a write to the object (`subresource` "") or
    /// one of its subresources.
    fn admission<'s>(&'s self, subresource: &'s str) -> Admission<'s> {
        Admission {
            authorization: self.engine.authorization(),
            store: &self.store,
            rt: self.rt(),
            subresource,
            namespace: self.scope.namespace.as_deref().unwrap_or_default(),
            user: &self.user,
            dry_run: self.params.get("dryRun").is_some(),
            warnings: &self.warnings,
            from_controller: false,
        }
    }

    async fn create(&self, mut body: Value) -> Result<HttpResponse, ApiError> {
        self.check_body(&mut body)?;
        let rt = self.rt();
        let generated = body["metadata"]["name"]
            .as_str()
            .is_none_or(str::is_empty)
            .then(|| body["metadata"]["generateName"].as_str().map(str::to_owned))
            .flatten()
            .filter(|p| !p.is_empty());
        let name = match body["metadata"]["name"].as_str().filter(|n| !n.is_empty()) {
            Some(n) => n.to_owned(),
            None => match &generated {
                Some(prefix) => format!("{prefix}{}", random_suffix()),
                None => {
                    return Err(validation::invalid(
                        rt,
                        "",
                        "metadata.name",
                        "FieldValueRequired",
                        "Required value: name or generateName is required".into(),
                    ));
                }
            },
        };
        validation::check_name(rt, &name)?;
        if has_sub(rt, "status") && rt.kind != "Namespace" {
            // As upstream strategies do: status is written through /status.
            if let Some(m) = body.as_object_mut() {
                m.remove("status");
            }
        }
        let key = ObjectKey::new(
            &self.scope.resource(),
            self.scope.namespace.as_deref().unwrap_or_default(),
            &name,
        );
        let mut named = body;
        named["metadata"]["name"] = json!(name);
        // As upstream: the request's manager owns what it sent and what its
        // decoder defaulted, not what the registry or admission plugins add.
        self.as_decoded(&mut named);
        let warnings = custom_strategy::prepare_create(rt, &mut named, self.unknown_fields())?;
        self.warnings.lock().extend(warnings);
        self.track_stored(None, &mut named);
        // The uid is the registry's, chosen before the strategy (a Job's
        // selector is made of it); whatever the body said is dropped.
        named["metadata"]["uid"] = json!(uuid::Uuid::new_v4().to_string());
        strategy::prepare_create(&self.strategy(), rt, &name, &mut named)?;
        self.validate(&named, None)?;
        let mut admitted = self.admission("").admit(Admit::Create, named, None).await?;
        admitted["metadata"]["name"] = json!(name);
        let created = match generated {
            Some(prefix) => generate_name::create_generated(
                self.store.as_ref(),
                key,
                admitted,
                &prefix,
                random_suffix,
            )?,
            None => self.store.create(&key, admitted)?,
        };
        self.respond(StatusCode::CREATED, &created)
    }

    async fn update(&self, mut body: Value) -> Result<HttpResponse, ApiError> {
        self.check_body(&mut body)?;
        let key = self.key()?;
        if body["metadata"]["name"].as_str().is_none_or(str::is_empty) {
            return Err(ApiError::BadRequest(format!(
                "the name of the object ({} based on URL) was undeterminable: name must be provided",
                key.name
            )));
        }
        if let Some(n) = body["metadata"]["name"].as_str()
            && n != key.name
        {
            return Err(ApiError::BadRequest(format!(
                "the name of the object ({n}) does not match the name on the URL ({})",
                key.name
            )));
        }
        let current = self.current(&key)?;
        if has_sub(self.rt(), "status") {
            body["status"] = current.get("status").cloned().unwrap_or(Value::Null);
            if body["status"].is_null()
                && let Some(m) = body.as_object_mut()
            {
                m.remove("status");
            }
        }
        self.as_decoded(&mut body);
        custom_strategy::require_resource_version(self.rt(), &body)?;
        let warnings =
            custom_strategy::prepare_update(self.rt(), &mut body, &current, self.unknown_fields())?;
        self.warnings.lock().extend(warnings);
        self.track_stored(Some(&current), &mut body);
        strategy::prepare_update(&self.strategy(), self.rt(), &current, &mut body)?;
        self.validate(&body, Some(&current))?;
        self.check_finalizers(&body, &current)?;
        let body = self
            .admission("")
            .admit(Admit::Update, body, Some(&current))
            .await?;
        let updated = self.store.update(&key, body, &Preconditions::default())?;
        self.respond(StatusCode::OK, &updated)
    }

    /// Read-modify-write with the resourceVersion read as precondition, retried
    /// on a lost race, so no concurrent write is ever lost.
    async fn modify(
        &self,
        key: &ObjectKey,
        subresource: &str,
        create_missing: Option<&Value>,
        change: impl Fn(&Value) -> Result<Value, ApiError>,
    ) -> Result<(StatusCode, Arc<Value>), ApiError> {
        let admission = self.admission(subresource);
        for _ in 0..16 {
            let Some(current) = self.stored(key) else {
                if let Some(object) = create_missing {
                    let mut object = object.clone();
                    self.check_body(&mut object)?;
                    validation::check_name(self.rt(), &key.name)?;
                    object["metadata"]["uid"] = json!(uuid::Uuid::new_v4().to_string());
                    strategy::prepare_create(&self.strategy(), self.rt(), &key.name, &mut object)?;
                    custom_strategy::prepare_create(self.rt(), &mut object, UnknownFields::Drop)?;
                    self.validate(&object, None)?;
                    let object = admission.admit(Admit::Create, object, None).await?;
                    return Ok((StatusCode::CREATED, self.store.create(key, object)?));
                }
                return Err(self.not_found(key));
            };
            let rv = current["metadata"]["resourceVersion"]
                .as_str()
                .map(str::to_owned);
            let mut changed = change(&current)?;
            strategy::prepare_update(&self.strategy(), self.rt(), &current, &mut changed)?;
            custom_strategy::prepare_update(
                self.rt(),
                &mut changed,
                &current,
                UnknownFields::Drop,
            )?;
            self.validate(&changed, Some(&current))?;
            let changed = admission
                .admit(Admit::Update, changed, Some(&current))
                .await?;
            let pinned = changed["metadata"]["resourceVersion"]
                .as_str()
                .map(str::to_owned);
            let pre = Preconditions {
                resource_version: if pinned.is_some() && pinned != rv {
                    pinned.clone()
                } else {
                    rv
                },
                uid: None,
            };
            match self.store.update(key, changed, &pre) {
                Err(ApiError::Conflict { .. }) if pinned.is_none() => continue,
                other => return other.map(|o| (StatusCode::OK, o)),
            }
        }
        Err(ApiError::Internal(
            "too many conflicting writes; try again".into(),
        ))
    }

    async fn patch(&self, kind: PatchType, body: &[u8]) -> Result<HttpResponse, ApiError> {
        self.check_patch_options(kind)?;
        if kind == PatchType::Apply {
            return self.apply(body).await;
        }
        let key = self.key()?;
        let patch = request::parse_off_worker(body, request::decode_json).await?;
        let status_sub = has_sub(self.rt(), "status");
        let schema = openapi::definitions().get(&self.rt().definition);
        // Duplicate keys in the patch itself come first, as upstream lists them.
        let patch_dups: Vec<String> = match kind {
            PatchType::Json => field_validation::duplicates(body)
                .into_iter()
                .map(|d| format!("json patch {d}"))
                .collect(),
            _ => field_validation::duplicates(body),
        };
        let found = RefCell::new(Vec::new());
        let (code, object) = self
            .modify(&key, "", None, |current| {
                let mut next = current.clone();
                next["metadata"]["resourceVersion"] = Value::Null;
                patch::apply(kind, &mut next, &patch, schema)?;
                if next["metadata"]["resourceVersion"].is_null()
                    && let Some(m) = next["metadata"].as_object_mut()
                {
                    m.remove("resourceVersion");
                }
                // The patched object is decoded as any body: a value of the
                // wrong type refuses the patch, and nothing is stored.
                if let Some(why) = go_types::type_error(&self.rt().definition, &next) {
                    return Err(match kind {
                        PatchType::StrategicMerge => field_validation::patch_invalid(
                            &field_validation::go_format(&patch),
                            strategic_mismatch(&why),
                        ),
                        _ => field_validation::patch_invalid(
                            &serde_json::to_string(&next).unwrap_or_default(),
                            &why,
                        ),
                    });
                }
                if let Some(n) = next["metadata"]["name"].as_str()
                    && n != key.name
                {
                    return Err(ApiError::BadRequest(format!(
                        "the name of the object ({n}) does not match the name on the URL ({})",
                        key.name
                    )));
                }
                if status_sub {
                    keep_status(current, &mut next);
                }
                self.check_finalizers(&next, current)?;
                let mut checked = field_validation::check_value(next, &self.rt().field_schema());
                checked.problems.splice(0..0, patch_dups.iter().cloned());
                if self.directive == Directive::Strict && !checked.problems.is_empty() {
                    let shown = match kind {
                        PatchType::StrategicMerge => field_validation::go_format(&patch),
                        _ => serde_json::to_string(&checked.value).unwrap_or_default(),
                    };
                    return Err(field_validation::patch_error(&shown, &checked.problems));
                }
                *found.borrow_mut() = std::mem::take(&mut checked.problems);
                let mut next = checked.value;
                self.as_decoded(&mut next);
                self.track(Some(current), &mut next);
                Ok(next)
            })
            .await?;
        if self.directive == Directive::Warn {
            self.warnings.lock().extend(found.into_inner());
        }
        self.respond(code, &object)
    }

    async fn delete(&self, content_type: &str, body: &[u8]) -> Result<HttpResponse, ApiError> {
        let key = self.key()?;
        let req = delete::parse(&self.params, content_type, body)?;
        let current = self.current(&key).inspect_err(|_| {
            // Upstream warns before it looks the object up.
            let default =
                req.options.propagation.is_none() && req.options.orphan_dependents.is_none();
            if default && let Some(w) = self.rt().delete_default_warning() {
                self.warnings.lock().push(w.to_owned());
            }
        })?;
        let mut admission = self.admission("");
        admission.dry_run = req.dry_run;
        admission.admit_delete(&current, &req.raw).await?;
        let clock = self.engine.registry().clock().clone();
        let answer = delete::delete_one(&self.store, &clock, self.rt(), &key, &req).map_err(
            |e| match e {
                ApiError::ObjectNotFound(_) => self.not_found(&key),
                e => e,
            },
        )?;
        self.warnings.lock().extend(answer.warnings);
        if answer.body["kind"] == "Status" {
            return Ok(wire::respond(self.reply(answer.status), &answer.body));
        }
        self.respond(answer.status, &answer.body)
    }

    async fn delete_collection(
        &self,
        content_type: &str,
        body: &[u8],
    ) -> Result<HttpResponse, ApiError> {
        let filter = self.filter()?;
        let req = delete::parse(&self.params, content_type, body)?;
        let clock = self.engine.registry().clock().clone();
        let snapshot = self.store.snapshot(&self.scope.resource());
        // Each item is admitted as its own delete, as upstream does.
        let mut admission = self.admission("");
        admission.dry_run = req.dry_run;
        for (_, object) in snapshot.iter(filter.namespace.as_deref(), None) {
            if filter.matches(&object) {
                admission.admit_delete(&object, &req.raw).await?;
            }
        }
        let list = delete::delete_collection(
            &self.store,
            &clock,
            self.rt(),
            &snapshot,
            filter.namespace.as_deref(),
            |o| filter.matches(o),
            &req,
        )?;
        Ok(wire::respond(self.reply(StatusCode::OK), &list))
    }

    fn view(&self, sub: Sub, object: &Value) -> Value {
        match sub {
            Sub::Status | Sub::Finalize | Sub::Approval => {
                custom_strategy::present(self.rt(), object).into_owned()
            }
            Sub::Scale => crate::resources::scale::view(self.rt(), object),
        }
    }

    /// Writes a changed view back onto the object.
    fn unview(&self, sub: Sub, current: &Value, view: &Value) -> Result<Value, ApiError> {
        let mut next = current.clone();
        match sub {
            Sub::Status => {
                next["status"] = view.get("status").cloned().unwrap_or(Value::Null);
                for f in status_writes_metadata(self.rt()) {
                    match view["metadata"].get(*f) {
                        Some(v) => next["metadata"][*f] = v.clone(),
                        None => {
                            if let Some(m) = next["metadata"].as_object_mut() {
                                m.remove(*f);
                            }
                        }
                    }
                }
            }
            Sub::Scale => {
                validation::check_sub_type_meta(view, "Scale", "autoscaling", &["autoscaling/v1"])?;
                let name = current["metadata"]["name"].as_str().unwrap_or_default();
                if let Some(n) = view["metadata"]["name"].as_str()
                    && n != name
                {
                    return Err(ApiError::BadRequest(format!(
                        "the name of the object ({n}) does not match the name on the URL ({name})"
                    )));
                }
                if let Some(why) = go_types::type_error(SCALE, view) {
                    return Err(field_validation::decode_failure(self.rt(), view, &why));
                }
                // Omitted, as Go omits a zero: none is zero replicas.
                let replicas = view["spec"]["replicas"].as_i64().unwrap_or(0);
                if replicas < 0 {
                    // Upstream validates the Scale itself first.
                    return Err(ApiError::Invalid {
                        target: crate::error::Target {
                            name: name.to_owned(),
                            group: "autoscaling".into(),
                            kind: "Scale".into(),
                        },
                        kind: "Scale.autoscaling".into(),
                        causes: vec![crate::error::Cause {
                            reason: "FieldValueInvalid".into(),
                            message: format!(
                                "Invalid value: {replicas}: must be greater than or equal to 0"
                            ),
                            field: "spec.replicas".into(),
                        }],
                    });
                }
                crate::resources::scale::set_replicas(self.rt(), &mut next, replicas);
            }
            Sub::Finalize => {
                // Upstream's finalize strategy keeps only the old status;
                // the body is decoded (and defaulted) as any.
                next = view.clone();
                strategy::defaults(self.rt(), &mut next);
                keep_status(current, &mut next);
            }
            Sub::Approval => {
                let now = self.engine.registry().clock().now();
                let now = now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
                next = strategy::certificates::approval(current, view, &now)
                    .map_err(|causes| self.invalid(current, causes))?;
            }
        }
        if sub == Sub::Status {
            let causes = strategy::validate::validate_status(self.rt(), &next);
            if !causes.is_empty() {
                return Err(self.invalid(current, causes));
            }
        }
        if sub == Sub::Status && self.rt().kind == "CertificateSigningRequest" {
            let causes = strategy::certificates::status(current, &mut next);
            if !causes.is_empty() {
                return Err(self.invalid(current, causes));
            }
        }
        if let Some(rv) = view["metadata"]["resourceVersion"].as_str() {
            next["metadata"]["resourceVersion"] = json!(rv);
        }
        Ok(next)
    }

    /// How a create or update body's unknown fields are treated.
    fn unknown_fields(&self) -> UnknownFields {
        UnknownFields::from_param(self.params.get("fieldValidation"))
    }

    fn get_sub(&self, sub: Sub) -> Result<HttpResponse, ApiError> {
        let key = self.key()?;
        let object = self.current(&key)?;
        Ok(wire::respond(HttpResponse::Ok(), &self.view(sub, &object)))
    }

    async fn update_sub(&self, sub: Sub, body: Value) -> Result<HttpResponse, ApiError> {
        let key = self.key()?;
        let current = self.current(&key)?;
        if sub == Sub::Status {
            custom_strategy::require_resource_version(self.rt(), &body)?;
        }
        let mut next = self.unview(sub, &current, &body)?;
        custom_strategy::prepare_update(self.rt(), &mut next, &current, UnknownFields::Drop)?;
        let mut next = self
            .admission(sub.name())
            .admit(Admit::Update, next, Some(&current))
            .await?;
        self.track_sub(sub.name(), &current, &mut next);
        let updated = self.store.update(&key, next, &Preconditions::default())?;
        Ok(wire::respond(HttpResponse::Ok(), &self.view(sub, &updated)))
    }

    async fn patch_sub(
        &self,
        sub: Sub,
        kind: PatchType,
        body: &[u8],
    ) -> Result<HttpResponse, ApiError> {
        let key = self.key()?;
        let schema = openapi::definitions().get(&self.rt().definition);
        let patch = match kind {
            PatchType::Apply => request::decode_yaml(body)?,
            _ => request::decode_json(body)?,
        };
        self.check_patch_options(kind)?;
        let (_, updated) = self
            .modify(&key, sub.name(), None, |current| {
                if kind == PatchType::Apply && sub == Sub::Status {
                    let mut next = self.apply_status(current, &patch)?;
                    if let Some(m) = next["metadata"].as_object_mut() {
                        m.remove("resourceVersion");
                    }
                    return Ok(next);
                }
                let mut view = self.view(sub, current);
                let rv = view["metadata"]["resourceVersion"].take();
                let schema = match sub {
                    Sub::Status | Sub::Finalize | Sub::Approval => schema,
                    Sub::Scale => openapi::definitions().get(SCALE),
                };
                patch::apply(kind, &mut view, &patch, schema)?;
                if view["metadata"]["resourceVersion"].is_null() {
                    view["metadata"]["resourceVersion"] = rv;
                }
                if sub == Sub::Scale
                    && kind != PatchType::StrategicMerge
                    && let Some(why) = go_types::type_error(SCALE, &view)
                {
                    let shown = serde_json::to_string(&view).unwrap_or_default();
                    return Err(field_validation::patch_invalid(&shown, &why));
                }
                let mut next = self.unview(sub, current, &view)?;
                if view["metadata"]["resourceVersion"] == current["metadata"]["resourceVersion"]
                    && let Some(m) = next["metadata"].as_object_mut()
                {
                    m.remove("resourceVersion");
                }
                self.track_sub(sub.name(), current, &mut next);
                Ok(next)
            })
            .await?;
        Ok(wire::respond(HttpResponse::Ok(), &self.view(sub, &updated)))
    }
}

/// The definition of the `/scale` subresource's body.
const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";

/// An error as upstream answers a request for a Table or metadata view:
/// indented, and without the closing newline.
fn indented(e: &ApiError) -> HttpResponse {
    let status = e.status();
    let mut res = HttpResponse::build(e.status_code())
        .content_type("application/json")
        .body(wire::indent(&wire::to_vec(&status)));
    crate::error::mark(&mut res, &status);
    res
}

/// How a strategic merge patch words a value of the wrong shape: it fails
/// while merging, before anything decodes the result.
fn strategic_mismatch(go_error: &str) -> &str {
    if go_error.starts_with("json: cannot unmarshal array") && go_error.contains("of type map[") {
        "cannot restore map from slice"
    } else if go_error.starts_with("json: cannot unmarshal object")
        && go_error.contains("of type []")
    {
        "cannot restore slice from map"
    } else {
        go_error
    }
}

/// Kinds whose status strategy keeps none of a status write's metadata
/// (`ResetObjectMetaForStatus`, or the old object's metadata copied), as
/// kube-apiserver 1.34's registries have it; custom resources are the same.
const STATUS_RESETS_METADATA: [(&str, &str); 10] = [
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    ("certificates.k8s.io", "PodCertificateRequest"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("internal.apiserver.k8s.io", "StorageVersion"),
    ("networking.k8s.io", "ServiceCIDR"),
    ("resource.k8s.io", "ResourceClaim"),
    ("storage.k8s.io", "VolumeAttachment"),
    ("storagemigration.k8s.io", "StorageVersionMigration"),
];

/// The metadata a status write changes: the other registries' status
/// strategies reset only the spec, so labels, annotations, finalizers and
/// owner references come from the body (a Deployment's labels and a Pod's
/// owner references excepted).
fn status_writes_metadata(rt: &crate::resources::ResourceType) -> &'static [&'static str] {
    const ALL: &[&str] = &["labels", "annotations", "finalizers", "ownerReferences"];
    let reset = rt.custom.is_some()
        || STATUS_RESETS_METADATA
            .iter()
            .any(|(g, k)| *g == rt.group && *k == rt.kind);
    match (rt.group.as_str(), rt.kind.as_str()) {
        _ if reset => &[],
        ("apps", "Deployment") => &ALL[1..],
        ("", "Pod") => &ALL[..3],
        _ => ALL,
    }
}

/// Writes through the main resource leave `status` as it is.
fn keep_status(current: &Value, next: &mut Value) {
    match current.get("status") {
        Some(s) => next["status"] = s.clone(),
        None => {
            if let Some(m) = next.as_object_mut() {
                m.remove("status");
            }
        }
    }
}

fn encode_continue(rv: u64, ns: &str, name: &str) -> String {
    let c = Continue {
        v: "meta.k8s.io/v1".into(),
        rv,
        ns: ns.to_owned(),
        name: name.to_owned(),
    };
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&c).unwrap_or_default())
}

fn decode_continue(token: &str) -> Result<Continue, ApiError> {
    URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .ok()
        .and_then(|b| serde_json::from_slice::<Continue>(&b).ok())
        .filter(|c| c.v == "meta.k8s.io/v1")
        .ok_or_else(|| ApiError::BadRequest("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)".into()))
}

/// Five characters from upstream's alphabet for `generateName`.
pub(crate) fn random_suffix() -> String {
    use crate::controllers::client::NAME_ALPHABET;
    let bytes = uuid::Uuid::new_v4().into_bytes();
    bytes[..5]
        .iter()
        .map(|b| NAME_ALPHABET[*b as usize % NAME_ALPHABET.len()] as char)
        .collect()
}
