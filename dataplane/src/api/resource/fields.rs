//! Field management on the generic write path: every create, update and
//! patch records its manager; apply patches go through server-side apply.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use serde_json::{Value, json};

use super::{Handler, has_sub, keep_status};
use crate::api::field_validation::{self, Directive};
use crate::api::go_types;
use crate::api::managedfields::{self, Writer};
use crate::api::openapi;
use crate::api::patch::PatchType;
use crate::api::request::{self, Params};
use crate::error::{ApiError, Cause, Target};

/// Upstream's cap on a field manager's length.
const MAX_MANAGER: usize = 128;

/// The field manager of a request: `fieldManager`, else the user agent up
/// to its first `/` (as upstream derives it: `kubectl`, `python-requests`),
/// its unprintable characters dropped, cut at 128 bytes; `unknown` when
/// that leaves nothing, as upstream's field manager names it.
pub(crate) fn manager(params: &Params, user_agent: &str) -> String {
    if let Some(m) = params.get("fieldManager").filter(|m| !m.is_empty()) {
        return m.to_owned();
    }
    let mut prefix = String::new();
    for c in user_agent.split('/').next().unwrap_or_default().chars() {
        if c.is_control() {
            continue;
        }
        if prefix.len() + c.len_utf8() > MAX_MANAGER {
            break;
        }
        prefix.push(c);
    }
    if prefix.is_empty() {
        prefix.push_str("unknown");
    }
    prefix
}

/// A `PatchOptions` field error, as upstream's options validation words it.
fn invalid_options(field: &str, reason: &str, message: &str) -> ApiError {
    ApiError::Invalid {
        target: Target {
            name: String::new(),
            group: "meta.k8s.io".into(),
            kind: "PatchOptions".into(),
        },
        kind: "PatchOptions.meta.k8s.io".into(),
        causes: vec![Cause {
            reason: reason.into(),
            message: message.into(),
            field: field.into(),
        }],
    }
}

impl Handler<'_> {
    fn writer(&self) -> Writer<'_> {
        let rt = self.rt();
        Writer {
            manager: &self.field_manager,
            api_version: rt.api_version(),
            now: self
                .engine
                .registry()
                .clock()
                .now()
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            schema: match &rt.custom {
                Some(spec) => spec.typed_schema,
                None => openapi::definitions().get(&rt.definition),
            },
            status_subresource: has_sub(rt, "status"),
            subresource: None,
            reset: managedfields::reset_fields(&rt.definition),
        }
    }

    /// Records an Update through subresource `sub` (`status`, `scale`).
    pub(super) fn track_sub(&self, sub: &str, old: &Value, new: &mut Value) {
        let mut w = self.writer();
        w.subresource = Some(sub);
        w.reset = &[];
        managedfields::track_update(Some(old), new, &w);
    }

    /// Records an Update by this request's manager on `new`.
    pub(super) fn track(&self, old: Option<&Value>, new: &mut Value) {
        managedfields::track_update(old, new, &self.writer());
    }

    /// `force` and `fieldManager` as upstream validates `PatchOptions`.
    pub(super) fn check_patch_options(&self, kind: PatchType) -> Result<(), ApiError> {
        let force = self.params.get("force").is_some();
        let apply = kind == PatchType::Apply;
        if apply && self.params.get("fieldManager").is_none_or(str::is_empty) {
            return Err(invalid_options(
                "fieldManager",
                "FieldValueRequired",
                "Required value: is required for apply patch",
            ));
        }
        if !apply && force {
            return Err(invalid_options(
                "force",
                "FieldValueForbidden",
                "Forbidden: may not be specified for non-apply patch",
            ));
        }
        if self.field_manager.len() > MAX_MANAGER {
            return Err(invalid_options(
                "fieldManager",
                "FieldValueTooLong",
                &format!("Too long: may not be more than {MAX_MANAGER} bytes"),
            ));
        }
        Ok(())
    }

    /// Server-side apply (`application/apply-patch+yaml`, YAML or JSON).
    pub(super) async fn apply(&self, body: &[u8]) -> Result<HttpResponse, ApiError> {
        let key = self.key()?;
        let (mut config, dups) = request::parse_off_worker(body, |body| {
            let config = request::decode_yaml(body)
                .map_err(|e| ApiError::BadRequest(format!("error decoding patch: {e}")))?;
            Ok((config, field_validation::yaml_duplicates(body)))
        })
        .await?;
        let dups = self.yaml_problems(dups);
        if self.directive == Directive::Strict
            && let Some(refused) = dups.first()
        {
            return Err(ApiError::BadRequest(format!(
                "error strict decoding YAML: error converting YAML to JSON: {refused}"
            )));
        }
        self.warnings.lock().extend(dups);
        // An apply configuration names its type exactly: nothing defaults
        // its type meta, nothing converts it.
        let rt = self.rt();
        let (api, kind) = (
            config["apiVersion"].as_str().unwrap_or_default(),
            config["kind"].as_str().unwrap_or_default(),
        );
        if api != rt.api_version() || kind != rt.kind {
            let (group, version) = api.rsplit_once('/').unwrap_or(("", api));
            return Err(ApiError::BadRequest(format!(
                "invalid object type: {group}/{version}, Kind={kind}"
            )));
        }
        // As the configuration came: upstream types it before defaulting.
        self.check_declared(&config)?;
        self.check_body(&mut config)?;
        match config["metadata"]["name"].as_str() {
            Some(n) if n != key.name => {
                return Err(ApiError::BadRequest(format!(
                    "the name of the object ({n}) does not match the name on the URL ({})",
                    key.name
                )));
            }
            Some(_) => {}
            None => config["metadata"]["name"] = json!(key.name),
        }
        let force = self.params.flag("force");
        let w = self.writer();
        let status_sub = has_sub(self.rt(), "status");
        let pinned = config["metadata"]["resourceVersion"].clone();
        let mut created = managedfields::apply(None, &config, &w, force)?;
        go_types::strip(&self.rt().definition, &mut created);
        if status_sub
            && self.rt().kind != "Namespace"
            && let Some(m) = created.as_object_mut()
        {
            m.remove("status");
        }
        let (code, object) = self
            .modify(&key, "", Some(&created), |current| {
                let mut next = managedfields::apply(Some(current), &config, &w, force)?;
                // The merged object goes through the Go types as any body.
                go_types::strip(&self.rt().definition, &mut next);
                if status_sub {
                    keep_status(current, &mut next);
                }
                // The live resourceVersion is no precondition; one the
                // configuration names is.
                match (&pinned, next["metadata"].as_object_mut()) {
                    (Value::String(rv), Some(meta)) => {
                        meta.insert("resourceVersion".into(), json!(rv));
                    }
                    (_, Some(meta)) => {
                        meta.remove("resourceVersion");
                    }
                    _ => {}
                }
                Ok(next)
            })
            .await?;
        let code = if code == StatusCode::CREATED {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        };
        self.respond(code, &object)
    }

    /// An applied configuration must name only fields the type declares
    /// (or keeps unknown), whatever `fieldValidation` says: upstream cannot
    /// make a typed patch of it and answers a plain 500.
    fn check_declared(&self, config: &Value) -> Result<(), ApiError> {
        let rt = self.rt();
        let undeclared: Vec<String> = match &rt.custom {
            Some(spec) if spec.schema.is_object() => {
                let mut pruned = config.clone();
                let mut removed = Vec::new();
                crate::resources::schema::prune(&spec.schema, &mut pruned, "", &mut removed);
                removed
            }
            Some(_) => Vec::new(),
            None => field_validation::check_value(config.clone(), &rt.field_schema())
                .problems
                .iter()
                .filter_map(|p| p.strip_prefix("unknown field \"")?.strip_suffix('"'))
                .map(str::to_owned)
                .collect(),
        };
        if undeclared.is_empty() {
            return Ok(());
        }
        let errors: Vec<String> = undeclared
            .iter()
            .map(|p| format!(".{p}: field not declared in schema"))
            .collect();
        let errors = match errors.as_slice() {
            [one] => one.clone(),
            many => format!("errors:\n  {}", many.join("\n  ")),
        };
        let meta = &config["metadata"];
        Err(ApiError::Unclassified(format!(
            "failed to create typed patch object ({}/{}; {}/{}, Kind={}): {errors}",
            meta["namespace"].as_str().unwrap_or_default(),
            meta["name"].as_str().unwrap_or_default(),
            rt.group,
            rt.version,
            rt.kind,
        )))
    }

    /// Server-side apply through the status subresource: the manager owns
    /// what it applies of `status`; nothing else of the object changes.
    pub(super) fn apply_status(&self, current: &Value, config: &Value) -> Result<Value, ApiError> {
        let mut w = self.writer();
        w.subresource = Some("status");
        let mut config = config.clone();
        if let Some(m) = config.as_object_mut() {
            // Only status is written here; the rest of the body is ignored.
            m.retain(|k, _| matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "status"));
        }
        let merged = managedfields::apply(Some(current), &config, &w, self.params.flag("force"))?;
        let mut next = current.clone();
        next["status"] = merged.get("status").cloned().unwrap_or(Value::Null);
        next["metadata"]["managedFields"] = merged["metadata"]["managedFields"].clone();
        if next["metadata"]["managedFields"].is_null()
            && let Some(m) = next["metadata"].as_object_mut()
        {
            m.remove("managedFields");
        }
        Ok(next)
    }
}
