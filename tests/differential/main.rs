//! The differential suite: request cases replayed against kemu and compared,
//! answer by answer, with a real kube-apiserver's.
//!
//! ```text
//! cargo test --test differential                           # kemu against the goldens (CI)
//! cargo test --test differential -- --record KUBECONFIG    # upstream's answers into goldens
//! cargo test --test differential -- --live KUBECONFIG      # kemu against a live upstream
//!   [--only PREFIX] [--verbose] [--write-known] [--dump DIR]
//! ```
//!
//! `--write-known` rewrites `known.yaml` with the differences of this run:
//! an entry already there keeps its reason, a new one gets the cause
//! [`cause`] reads from its difference (edit it where that is not right).
//! `--dump DIR` writes both answers of each differing case into `DIR`
//! (`FILE__CASE.upstream`, `FILE__CASE.kemu`: the status, then the body).
//!
//! # Layout
//! - `cases/*.yaml`: the corpus, one area a file ([`case`]).
//! - `golden/*.json`: upstream's raw answers, written by `--record`
//!   (`scripts/differential record` starts the server and runs it).
//! - `known.yaml`: the differences left, each with its reason. A difference
//!   not listed fails the suite, and so does a listed one that is gone.
//! - [`replay`] sends a file's cases to one server, [`normalize`] and
//!   [`compare`] turn two answers into their first difference, [`json`]
//!   keeps a body's bytes while it is walked.

mod case;
mod compare;
mod json;
mod normalize;
mod replay;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::{Deserialize, Serialize};

use case::CaseFile;
use compare::{Comparable, difference};
use normalize::Normalizer;
use replay::{Answer, Target};

#[path = "../common/mod.rs"]
mod common;

/// Upstream's answers to one case file, as recorded.
#[derive(Serialize, Deserialize)]
struct Golden {
    /// The server's `gitVersion`.
    upstream: String,
    /// Its base URL, normalized away.
    server: String,
    answers: Vec<Answer>,
}

/// A difference left, and why.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Known {
    case: String,
    why: String,
    /// The difference shows in some runs only (a race with kemu's
    /// controllers): its absence is no failure.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    sometimes: bool,
}

enum Mode {
    Golden,
    Record(String),
    Live(String),
}

struct Options {
    mode: Mode,
    only: Option<String>,
    verbose: bool,
    write_known: bool,
    /// Where to write both answers of every case that differs.
    dump: Option<PathBuf>,
}

fn options() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let mut opts = Options {
        mode: Mode::Golden,
        only: None,
        verbose: false,
        write_known: false,
        dump: None,
    };
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--record" => opts.mode = Mode::Record(value()?),
            "--live" => opts.mode = Mode::Live(value()?),
            "--only" => opts.only = Some(value()?),
            "--verbose" => opts.verbose = true,
            "--write-known" => opts.write_known = true,
            "--dump" => opts.dump = Some(PathBuf::from(value()?)),
            // what `cargo test` passes to every test binary
            "--quiet" | "-q" | "--nocapture" | "--color" | "--test-threads" => {}
            other if other.starts_with("--") => return Err(format!("unknown option {other}")),
            _ => {}
        }
    }
    Ok(opts)
}

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/differential")
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("differential: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<bool, String> {
    json::self_check();
    normalize::self_check();
    let opts = options()?;
    let mut files = case::load(&dir().join("cases"))?;
    if let Some(prefix) = &opts.only {
        files.retain(|f| f.stem.starts_with(prefix.as_str()));
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    match &opts.mode {
        Mode::Record(kubeconfig) => rt.block_on(record(kubeconfig, &files)),
        Mode::Golden => {
            let (_kemu, kemu) = kemu_target()?;
            let upstream = files
                .iter()
                .map(|f| read_golden(f).map(|g| (g.server, g.answers)))
                .collect::<Result<Vec<_>, _>>()?;
            rt.block_on(compare_all(&opts, &files, upstream, &kemu))
        }
        Mode::Live(kubeconfig) => {
            let target = Target::from_kubeconfig(kubeconfig)?;
            let (_kemu, kemu) = kemu_target()?;
            let mut upstream = Vec::new();
            for f in &files {
                upstream.push((target.base.clone(), rt.block_on(target.replay(f))?));
            }
            rt.block_on(compare_all(&opts, &files, upstream, &kemu))
        }
    }
}

/// An in-process kemu with one cluster, and an admin of it.
fn kemu_target() -> Result<(kemu::Kemu, Target), String> {
    let kemu = kemu::Kemu::builder().build().map_err(|e| e.to_string())?;
    let record = kemu
        .registry()
        .create(common::eks_spec("differential"))
        .map_err(|e| e.to_string())?;
    let cert = record
        .ca
        .client_cert("kemu-admin", &["system:masters".into()], kemu.clock().now())
        .map_err(|e| e.to_string())?;
    let base = kemu::shared::advertise(&record)
        .server_url()
        .ok_or("no cluster endpoint")?;
    common::wait_for_bootstrap(&kemu, &record);
    let identity = format!("{}{}", cert.cert_pem, cert.key_pem);
    let target = Target::new(base, record.ca.cert_pem().as_bytes(), identity.as_bytes())?;
    Ok((kemu, target))
}

fn golden_path(file: &CaseFile) -> PathBuf {
    dir().join("golden").join(format!("{}.json", file.stem))
}

fn read_golden(file: &CaseFile) -> Result<Golden, String> {
    let path = golden_path(file);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "{}: {e} (record it: scripts/differential record)",
            path.display()
        )
    })?;
    let golden: Golden =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let ids: Vec<&str> = golden.answers.iter().map(|a| a.id.as_str()).collect();
    let want: Vec<&str> = file.cases.iter().map(|c| c.id.as_str()).collect();
    if ids != want {
        return Err(format!(
            "{}: recorded for other cases than cases/{}.yaml holds; record it again",
            path.display(),
            file.stem
        ));
    }
    Ok(golden)
}

async fn record(kubeconfig: &str, files: &[CaseFile]) -> Result<bool, String> {
    let target = Target::from_kubeconfig(kubeconfig)?;
    let version = server_version(&target).await?;
    for file in files {
        let answers = target.replay(file).await?;
        let golden = Golden {
            upstream: version.clone(),
            server: target.base.clone(),
            answers,
        };
        let text = serde_json::to_string_pretty(&golden).map_err(|e| e.to_string())? + "\n";
        std::fs::write(golden_path(file), text).map_err(|e| e.to_string())?;
        println!(
            "recorded {} ({} cases) from {version}",
            file.stem,
            file.cases.len()
        );
    }
    Ok(true)
}

async fn server_version(target: &Target) -> Result<String, String> {
    let case: case::Case = serde_norway::from_str("{id: version, method: GET, path: /version}")
        .map_err(|e| e.to_string())?;
    let file = CaseFile {
        area: String::new(),
        cases: vec![case],
        stem: "version".into(),
    };
    let answers = target.replay(&file).await?;
    let v: serde_json::Value = serde_json::from_str(&answers[0].body).map_err(|e| e.to_string())?;
    Ok(v["gitVersion"].as_str().unwrap_or("unknown").to_string())
}

/// One row of the table.
#[derive(Default)]
struct Row {
    cases: usize,
    identical: usize,
    known: usize,
    different: usize,
    first: Option<String>,
}

async fn compare_all(
    opts: &Options,
    files: &[CaseFile],
    upstream: Vec<(String, Vec<Answer>)>,
    kemu: &Target,
) -> Result<bool, String> {
    let known = read_known()?;
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut seen_known = Vec::new();
    let mut now_known = Vec::new();
    let mut report = String::new();
    for (file, (server, golden)) in files.iter().zip(upstream) {
        let answers = kemu.replay(file).await?;
        let mut up_norm = Normalizer::new(&server);
        let mut kemu_norm = Normalizer::new(&kemu.base);
        let row = rows
            .entry(format!("{} ({})", file.area, file.stem))
            .or_default();
        for ((case, up), ours) in file.cases.iter().zip(&golden).zip(&answers) {
            let a = Comparable::new(case, up, &mut up_norm);
            let b = Comparable::new(case, ours, &mut kemu_norm);
            if case.setup {
                continue;
            }
            let id = format!("{}/{}", file.stem, case.id);
            row.cases += 1;
            let diff = difference(case, &a, &b);
            let listed = known.get(&id);
            if let (Some(dir), Some(_)) = (&opts.dump, &diff) {
                dump(dir, &id, up, ours)?;
            }
            match (&diff, listed) {
                (None, None) => row.identical += 1,
                (None, Some(k)) if k.sometimes => {
                    row.identical += 1;
                    seen_known.push(id.clone());
                    now_known.push(Known {
                        case: id.clone(),
                        why: k.why.clone(),
                        sometimes: true,
                    });
                }
                (None, Some(_)) => {
                    row.identical += 1;
                    failures.push(format!("{id}: listed in known.yaml but now identical"));
                }
                (Some(d), Some(k)) => {
                    // A reason `cause` wrote follows the difference as it is
                    // now; one written by hand stays.
                    let why = if is_generic(&k.why) {
                        cause(d).to_owned()
                    } else {
                        k.why.clone()
                    };
                    let why = &why;
                    now_known.push(Known {
                        case: id.clone(),
                        why: why.clone(),
                        sometimes: k.sometimes,
                    });
                    row.known += 1;
                    seen_known.push(id.clone());
                    report.push_str(&format!("known {id}: {d}\n    why: {why}\n"));
                }
                (Some(d), None) => {
                    now_known.push(Known {
                        case: id.clone(),
                        why: cause(d).to_string(),
                        sometimes: false,
                    });
                    row.different += 1;
                    row.first.get_or_insert_with(|| format!("{}: {d}", case.id));
                    failures.push(format!("{id}: {d}"));
                    report.push_str(&format!(
                        "DIFF {id}: {d}\n    upstream {} {}\n    kemu     {} {}\n",
                        up.status,
                        json::clip(&up.body),
                        ours.status,
                        json::clip(&ours.body)
                    ));
                }
            }
        }
    }
    if opts.only.is_none() {
        for id in known.keys().filter(|id| !seen_known.contains(id)) {
            if !failures.iter().any(|f| f.starts_with(&format!("{id}:"))) {
                failures.push(format!("{id}: listed in known.yaml but no such difference"));
            }
        }
    }
    if opts.write_known {
        if opts.only.is_some() {
            return Err("--write-known needs the whole corpus (no --only)".into());
        }
        write_known(&now_known)?;
        println!("known.yaml: {} differences", now_known.len());
        return Ok(true);
    }
    let table = table(&rows);
    let out_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/differential");
    let _ = std::fs::create_dir_all(&out_dir);
    let _ = std::fs::write(out_dir.join("report.txt"), format!("{table}\n{report}"));
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{table}");
    if opts.verbose {
        let _ = writeln!(err, "{report}");
    }
    for f in &failures {
        let _ = writeln!(err, "FAIL {f}");
    }
    let total: usize = rows.values().map(|r| r.cases).sum();
    let identical: usize = rows.values().map(|r| r.identical).sum();
    let known_now: usize = rows.values().map(|r| r.known).sum();
    println!(
        "differential: {identical} of {total} answers identical to upstream's, {known_now} known differences (known.yaml)"
    );
    let passed = total - failures.len().min(total);
    println!("differential: {passed} passed, {} failed", failures.len());
    Ok(failures.is_empty())
}

/// Both answers of a differing case, as received, side by side in `dir`.
fn dump(dir: &Path, id: &str, upstream: &Answer, kemu: &Answer) -> Result<(), String> {
    let base = dir.join(id.replace('/', "__"));
    let write = |tail: &str, a: &Answer| {
        std::fs::create_dir_all(dir)
            .and_then(|()| {
                std::fs::write(
                    base.with_extension(tail),
                    format!("{}\n{}", a.status, a.body),
                )
            })
            .map_err(|e| format!("{}: {e}", dir.display()))
    };
    write("upstream", upstream)?;
    write("kemu", kemu)
}

fn read_known() -> Result<BTreeMap<String, Known>, String> {
    let path = dir().join("known.yaml");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let list: Option<Vec<Known>> =
        serde_norway::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut known = BTreeMap::new();
    for k in list.unwrap_or_default() {
        if k.why.trim().is_empty() {
            return Err(format!("known.yaml: {} has no reason", k.case));
        }
        let case = k.case.clone();
        if known.insert(case.clone(), k).is_some() {
            return Err(format!("known.yaml: {case} is listed twice"));
        }
    }
    Ok(known)
}

fn write_known(list: &[Known]) -> Result<(), String> {
    let mut text = String::from(
        "# Differences between kemu and upstream's goldens left in the differential suite,\n\
         # each with its cause. The suite fails on a difference not listed here, and on an\n\
         # entry whose difference is gone. Rewritten by `--write-known` (reasons kept).\n",
    );
    for k in list {
        text.push_str(&format!(
            "- case: {}\n  why: {}\n{}",
            k.case,
            serde_json::to_string(&k.why).map_err(|e| e.to_string())?,
            if k.sometimes {
                "  sometimes: true\n"
            } else {
                ""
            }
        ));
    }
    std::fs::write(dir().join("known.yaml"), text).map_err(|e| e.to_string())
}

/// Whether `why` is one [`cause`] writes.
fn is_generic(why: &str) -> bool {
    CAUSES.iter().any(|(_, c)| *c == why) || why == UNKNOWN_CAUSE
}

/// [`cause`]'s reason when no rule matches.
const UNKNOWN_CAUSE: &str = "kemu bug: the answer differs from upstream's";

/// The cause of a difference, as far as its first differing path tells
/// (the first rule whose pattern it contains): the gaps in kemu that the
/// suite found, each a bug to fix.
fn cause(diff: &str) -> &'static str {
    CAUSES
        .iter()
        .find(|(pattern, _)| diff.contains(pattern))
        .map_or(UNKNOWN_CAUSE, |(_, why)| why)
}

/// (pattern in the difference, the reason it gives).
const CAUSES: [(&str, &str); 12] = [
    (
        "status: 422 upstream",
        "kemu bug: upstream's validation for this kind or update (required, format, immutable fields) is missing, so kemu accepts what kube-apiserver refuses",
    ),
    (
        "managedFields",
        "kemu bug: managedFields differ from upstream's (fields set by upstream's defaulting or by a different manager/operation are tracked differently)",
    ),
    (
        "header warning",
        "kemu bug: the Warning header upstream sends (deprecation or field warnings) is missing or worded differently",
    ),
    (
        "body.kind: \"",
        "kemu bug: DELETE answers a Status where upstream answers the object (foreground/orphan deletion keeps it with the collector's finalizer; kemu's collector only handles the kinds it watches)",
    ),
    (
        ".generation",
        "kemu bug: metadata.generation differs from upstream's strategy for this kind",
    ),
    (
        "only upstream has it",
        "kemu bug: a field upstream's defaulting or strategy sets is missing",
    ),
    (
        "only kemu has it",
        "kemu bug: kemu sets a field upstream does not",
    ),
    (
        "key order",
        "kemu bug: keys in another order than upstream's (a type whose Go field order kemu's layouts lack)",
    ),
    ("status: ", "kemu bug: another status code than upstream's"),
    (
        "items upstream",
        "kemu bug: another number of items than upstream's",
    ),
    (
        "events upstream",
        "kemu bug: another sequence of watch events than upstream's",
    ),
    ("upstream,", "kemu bug: a value differs from upstream's"),
];

fn table(rows: &BTreeMap<String, Row>) -> String {
    let mut out = format!(
        "{:<44} {:>5} {:>9} {:>5} {:>9}  first difference\n",
        "area", "cases", "identical", "known", "different"
    );
    let mut total = Row::default();
    for (area, r) in rows {
        out.push_str(&format!(
            "{:<44} {:>5} {:>9} {:>5} {:>9}  {}\n",
            area,
            r.cases,
            r.identical,
            r.known,
            r.different,
            r.first.as_deref().map(json::clip).unwrap_or_default()
        ));
        total.cases += r.cases;
        total.identical += r.identical;
        total.known += r.known;
        total.different += r.different;
    }
    out.push_str(&format!(
        "{:<44} {:>5} {:>9} {:>5} {:>9}\n",
        "total", total.cases, total.identical, total.known, total.different
    ));
    out
}
