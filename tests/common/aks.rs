//! Helpers for the AKS tests: kemu served in-process over HTTPS, and `az`
//! isolated in a sandbox that trusts kemu's CA.

use std::path::{Path, PathBuf};
use std::process::Output;

use kemu::Kemu;
use kemu::server::{Listeners, Running};

use super::{Sandbox, text};

/// kemu serving its facades on free ports, inside the test's actix system.
pub struct Served {
    pub running: Running,
    /// The AKS facade's base URL (`https://127.0.0.1:PORT`).
    pub arm: String,
    /// kemu's CA bundle for `REQUESTS_CA_BUNDLE`.
    pub ca: PathBuf,
}

/// Starts `kemu`'s listeners on port 0; the run dir goes in `sandbox`.
pub fn serve(kemu: Kemu, sandbox: &Sandbox) -> Served {
    let listeners = Listeners {
        bind_host: "127.0.0.1".into(),
        eks_port: 0,
        gke_port: 0,
        aks_port: 0,
        run_dir: sandbox.path("run"),
    };
    let running = kemu::server::start(kemu, &listeners).expect("start kemu");
    let arm = running.ready.aks.clone();
    let ca = PathBuf::from(&running.ready.ca_bundle);
    Served { running, arm, ca }
}

/// Runs `az` with its config in the sandbox, trusting only kemu's CA, with
/// MSAL instance discovery off (it would go to the internet).
pub fn az(sandbox: &Sandbox, ca: &Path, args: &[&str]) -> Output {
    sandbox
        .command("az")
        .env("REQUESTS_CA_BUNDLE", ca)
        .env("AZURE_CORE_INSTANCE_DISCOVERY", "false")
        .env("AZURE_CORE_COLLECT_TELEMETRY", "false")
        .env("AZURE_CORE_NO_COLOR", "true")
        .env("AZURE_CORE_SURVEY_MESSAGE", "false")
        .args(args)
        .output()
        .expect("run az")
}

/// `az …` that must succeed; returns its stdout.
pub fn az_ok(sandbox: &Sandbox, ca: &Path, args: &[&str]) -> String {
    let out = az(sandbox, ca, args);
    assert!(out.status.success(), "az {args:?}: {}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `az …` printing JSON that must succeed; returns the parsed output.
pub fn az_json(sandbox: &Sandbox, ca: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    let stdout = az_ok(sandbox, ca, &all);
    serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("az {args:?} printed no JSON ({e}): {stdout}"))
}

/// Runs blocking client calls off the actix thread (kemu's listeners are
/// served by it), re-raising their panic.
pub async fn blocking(f: impl FnOnce() + Send + 'static) {
    if let Err(e) = actix_web::rt::task::spawn_blocking(f).await {
        std::panic::resume_unwind(e.into_panic());
    }
}

/// Registers kemu (`arm`) as the cloud `kemu`, selects it and logs in as a
/// service principal in kemu's default tenant.
pub fn login(sandbox: &Sandbox, arm: &str, ca: &Path, client_id: &str, secret: &str) -> Output {
    az_ok(
        sandbox,
        ca,
        &[
            "cloud",
            "register",
            "-n",
            "kemu",
            "--endpoint-resource-manager",
            arm,
        ],
    );
    az_ok(sandbox, ca, &["cloud", "set", "-n", "kemu"]);
    az(
        sandbox,
        ca,
        &[
            "login",
            "--service-principal",
            "-u",
            client_id,
            "-p",
            secret,
            "--tenant",
            kemu_aks::state::DEFAULT_TENANT,
            "-o",
            "json",
        ],
    )
}

/// Runs `tests/py/{script}` against kemu's AKS facade (`KEMU_ARM`), trusting
/// only kemu's CA, in kemu's default tenant and the given subscription.
pub fn python(sandbox: &Sandbox, script: &str, arm: &str, ca: &Path, subscription: &str) -> Output {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/py")
        .join(script);
    sandbox
        .command("python3")
        .arg(path)
        .env("REQUESTS_CA_BUNDLE", ca)
        .env("KEMU_ARM", arm)
        .env("KEMU_TENANT", kemu_aks::state::DEFAULT_TENANT)
        .env("KEMU_SUBSCRIPTION", subscription)
        .env("KEMU_OUT", sandbox.path("out"))
        .output()
        .expect("run python3")
}
