//! `pods/log`: the synthetic lines of one container
//! ([`crate::controllers::container_logs`]), with upstream's options
//! (`container`, `follow`, `previous`, `timestamps`, `tailLines`,
//! `sinceSeconds`/`sinceTime`, `limitBytes`) and the kubelet's refusals,
//! worded as kubelet and apiserver word them.

use std::sync::Arc;

use actix_web::HttpResponse;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures_util::stream;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::api::subresources::{Ctx, SubresourceError};
use crate::controllers::container_logs::{ContainerRun, LogLine, rfc3339_nano};
use crate::controllers::obj;
use crate::error::ApiError;
use crate::store::{ObjectKey, Store, WatchFrom};

/// The parsed `PodLogOptions` of the query.
#[derive(Debug, Clone, Default)]
struct Options {
    container: Option<String>,
    follow: bool,
    previous: bool,
    timestamps: bool,
    tail_lines: Option<i64>,
    limit_bytes: Option<i64>,
    since: Option<DateTime<Utc>>,
}

fn number(ctx: &Ctx, name: &str) -> Result<Option<i64>, ApiError> {
    ctx.params
        .get(name)
        .map(|v| {
            crate::api::options::parse_int(v)
                .map_err(|e| ApiError::BadRequest(format!("invalid {name}: {e}")))
        })
        .transpose()
}

fn invalid(pod: &str, field: &str, message: String) -> ApiError {
    ApiError::Invalid {
        target: crate::error::Target {
            name: pod.to_owned(),
            group: String::new(),
            kind: "PodLogOptions".into(),
        },
        kind: "PodLogOptions".into(),
        causes: vec![crate::error::Cause {
            reason: "FieldValueInvalid".into(),
            message,
            field: field.into(),
        }],
    }
}

impl Options {
    /// The options, validated as upstream's `ValidatePodLogOptions`.
    fn parse(ctx: &Ctx) -> Result<Self, ApiError> {
        let tail_lines = number(ctx, "tailLines")?;
        let limit_bytes = number(ctx, "limitBytes")?;
        let since_seconds = number(ctx, "sinceSeconds")?;
        let since_time = ctx
            .params
            .get("sinceTime")
            .map(|t| {
                obj::parse_time(t).ok_or_else(|| {
                    ApiError::BadRequest(format!("parsing time \"{t}\" as RFC3339: invalid"))
                })
            })
            .transpose()?;
        let pod = ctx.scope.name.as_deref().unwrap_or_default();
        let invalid = |field: &str, message: String| invalid(pod, field, message);
        if let Some(n) = tail_lines.filter(|n| *n < 0) {
            return Err(invalid(
                "tailLines",
                format!("Invalid value: {n}: must be greater than or equal to 0"),
            ));
        }
        if let Some(n) = limit_bytes.filter(|n| *n < 1) {
            return Err(invalid(
                "limitBytes",
                format!("Invalid value: {n}: must be greater than 0"),
            ));
        }
        if since_seconds.is_some() && since_time.is_some() {
            return Err(invalid(
                "",
                "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified".into(),
            ));
        }
        if let Some(n) = since_seconds.filter(|n| *n < 1) {
            return Err(invalid(
                "sinceSeconds",
                format!("Invalid value: {n}: must be greater than 0"),
            ));
        }
        let now = ctx.now();
        Ok(Self {
            container: ctx.params.get("container").map(str::to_owned),
            follow: ctx.params.flag("follow"),
            previous: ctx.params.flag("previous"),
            timestamps: ctx.params.flag("timestamps"),
            tail_lines,
            limit_bytes,
            since: since_time.or(since_seconds.map(|s| obj::shift(now, -obj::secs(s)))),
        })
    }
}

/// Upstream's `validateContainer`: the container named, or the only one.
fn container_name(pod: &Value, wanted: Option<&str>) -> Result<String, ApiError> {
    let pod_name = obj::name(pod);
    let names = |field: &str| -> Vec<String> {
        pod["spec"][field]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["name"].as_str().map(str::to_owned))
            .collect()
    };
    let containers = names("containers");
    match wanted {
        None => match containers.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(ApiError::BadRequest(format!(
                "a container name must be specified for pod {pod_name}"
            ))),
            many => Err(ApiError::BadRequest(format!(
                "a container name must be specified for pod {pod_name}, choose one of: [{}]",
                many.join(" ")
            ))),
        },
        Some(c) => {
            let known = ["containers", "initContainers", "ephemeralContainers"]
                .iter()
                .any(|f| names(f).iter().any(|n| n == c));
            if known {
                Ok(c.to_owned())
            } else {
                Err(ApiError::BadRequest(format!(
                    "container {c} is not valid for pod {pod_name}"
                )))
            }
        }
    }
}

/// The container's status, from any of the three status lists.
pub(crate) fn container_status<'a>(pod: &'a Value, name: &str) -> Option<&'a Value> {
    [
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
    ]
    .iter()
    .filter_map(|f| pod["status"][f].as_array())
    .flatten()
    .find(|s| s["name"] == name)
}

/// The run whose log is read, or the kubelet's refusal
/// (`validateContainerLogStatus`).
fn run_of(pod: &Value, name: &str, previous: bool) -> Result<ContainerRun, ApiError> {
    let pod_name = obj::name(pod);
    let Some(status) = container_status(pod, name) else {
        return Err(ApiError::BadRequest(format!(
            "container \"{name}\" in pod \"{pod_name}\" is waiting to start: ContainerCreating"
        )));
    };
    let state = &status["state"];
    let last = &status["lastState"];
    let refuse = |m: String| Err(ApiError::BadRequest(m));
    let from = |s: &Value| {
        ContainerRun::from_state(pod, name, s).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "container \"{name}\" in pod \"{pod_name}\" is waiting to start - no logs yet"
            ))
        })
    };
    if previous {
        if last.get("terminated").is_none() {
            return refuse(format!(
                "previous terminated container \"{name}\" in pod \"{pod_name}\" not found"
            ));
        }
        return from(last);
    }
    if state.get("running").is_some() || state.get("terminated").is_some() {
        return from(state);
    }
    if last.get("terminated").is_some() {
        return from(last);
    }
    if let Some(reason) = state["waiting"]["reason"].as_str() {
        let why = match reason {
            "ErrImagePull" => "image can't be pulled",
            "ImagePullBackOff" => "trying and failing to pull image",
            other => other,
        };
        return refuse(format!(
            "container \"{name}\" in pod \"{pod_name}\" is waiting to start: {why}"
        ));
    }
    refuse(format!(
        "container \"{name}\" in pod \"{pod_name}\" is waiting to start - no logs yet"
    ))
}

fn render(line: &LogLine, timestamps: bool) -> String {
    if timestamps {
        format!("{} {}\n", rfc3339_nano(line.at), line.text)
    } else {
        format!("{}\n", line.text)
    }
}

/// Cuts `text` to what `limit` bytes still allow; `None` once nothing may be sent.
fn limited(text: String, remaining: &mut Option<i64>) -> Option<String> {
    match remaining {
        None => Some(text),
        Some(0) => None,
        Some(n) => {
            let take = (*n as usize).min(text.len());
            *n -= take as i64;
            let mut cut = take;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            Some(text[..cut].to_owned())
        }
    }
}

/// GET `pods/{name}/log`.
pub fn serve(ctx: &Ctx, method: &str) -> Result<HttpResponse, SubresourceError> {
    if method != "GET" {
        return Err(ApiError::MethodNotAllowed.into());
    }
    let opts = Options::parse(ctx)?;
    let pod = ctx.object()?;
    let name = container_name(&pod, opts.container.as_deref())?;
    if pod["spec"]["nodeName"].as_str().is_none_or(str::is_empty) {
        // Not on a node yet: the apiserver has no kubelet to ask, and
        // answers with no content at all.
        return Ok(HttpResponse::NoContent().finish());
    }
    let run = run_of(&pod, &name, opts.previous)?;
    let now = ctx.now();
    let mut lines: Vec<LogLine> = run
        .lines_until(now)
        .into_iter()
        .filter(|l| opts.since.is_none_or(|s| l.at >= s))
        .collect();
    let total = run.lines_until(now).len();
    if let Some(n) = opts.tail_lines {
        let skip = lines.len().saturating_sub(n as usize);
        lines.drain(..skip);
    }
    let mut remaining = opts.limit_bytes;
    let mut body = String::new();
    for l in &lines {
        match limited(render(l, opts.timestamps), &mut remaining) {
            Some(t) => body.push_str(&t),
            None => break,
        }
    }
    if !opts.follow || opts.previous || remaining == Some(0) {
        return Ok(text_response(body));
    }
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    let follower = Follower {
        store: ctx.store.clone(),
        clock: ctx.clock(),
        key: ctx.key(),
        uid: obj::uid(&pod).to_owned(),
        container: name,
        run,
        sent: total,
        timestamps: opts.timestamps,
        remaining,
        tx,
    };
    actix_web::rt::spawn(follower.run(Bytes::from(body)));
    let body = stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|chunk| (Ok::<_, std::convert::Infallible>(chunk), rx))
    });
    Ok(HttpResponse::Ok()
        .content_type("text/plain")
        .insert_header(("Cache-Control", "no-cache, private"))
        .streaming(body))
}

fn text_response(body: String) -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain").body(body)
}

/// A `follow=true` stream: new lines as the clock reaches them, until the
/// container's run ends, the Pod goes, or the client leaves.
struct Follower {
    store: Arc<dyn Store>,
    clock: kemu_shared::SharedClock,
    key: ObjectKey,
    uid: String,
    container: String,
    run: ContainerRun,
    /// Lines of `run` already sent (or skipped by the options).
    sent: usize,
    timestamps: bool,
    remaining: Option<i64>,
    tx: mpsc::Sender<Bytes>,
}

impl Follower {
    async fn run(mut self, first: Bytes) {
        if !first.is_empty() && self.tx.send(first).await.is_err() {
            return;
        }
        let Ok(sub) = self.store.watch(&self.key.resource, WatchFrom::Now) else {
            return;
        };
        let mut live = sub.live;
        loop {
            let now = self.clock.now();
            // The Pod as stored now: gone, recreated or restarted ends the stream.
            let Some(pod) = self.store.get(&self.key) else {
                return;
            };
            if obj::uid(&pod) != self.uid {
                return;
            }
            let current = container_status(&pod, &self.container)
                .and_then(|s| ContainerRun::from_state(&pod, &self.container, &s["state"]));
            match current {
                Some(c) if c.started == self.run.started => self.run = c,
                Some(_) => return,
                None => {}
            }
            let lines = self.run.lines_until(now);
            for l in lines.iter().skip(self.sent) {
                let Some(text) = limited(render(l, self.timestamps), &mut self.remaining) else {
                    return;
                };
                if self.tx.send(Bytes::from(text)).await.is_err() {
                    return;
                }
            }
            self.sent = self.sent.max(lines.len());
            if self.remaining == Some(0) {
                return;
            }
            let Some(next) = self.run.next_line_after(now) else {
                return;
            };
            tokio::select! {
                _ = self.clock.sleep_until(next) => {}
                event = live.recv() => match event {
                    Ok(e) if e.key != self.key => continue,
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(_) => return,
                },
                _ = self.tx.closed() => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn containers_are_chosen_and_refused_as_upstream() {
        let pod = json!({"metadata": {"name": "web"},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        assert_eq!(
            container_name(&pod, None).unwrap_err().to_string(),
            "a container name must be specified for pod web, choose one of: [a b]"
        );
        assert_eq!(container_name(&pod, Some("b")).unwrap(), "b");
        assert_eq!(
            container_name(&pod, Some("c")).unwrap_err().to_string(),
            "container c is not valid for pod web"
        );
        let waiting = json!({"metadata": {"name": "web"}, "spec": {"containers": [{"name": "a"}]},
            "status": {"containerStatuses": [{"name": "a", "state": {"waiting": {"reason": "ContainerCreating"}}, "lastState": {}}]}});
        assert_eq!(
            run_of(&waiting, "a", false).unwrap_err().to_string(),
            "container \"a\" in pod \"web\" is waiting to start: ContainerCreating"
        );
        assert_eq!(
            run_of(&waiting, "a", true).unwrap_err().to_string(),
            "previous terminated container \"a\" in pod \"web\" not found"
        );
        let mut left = Some(5);
        assert_eq!(limited("hello world".into(), &mut left).unwrap(), "hello");
        assert!(limited("x".into(), &mut left).is_none());
    }
}
