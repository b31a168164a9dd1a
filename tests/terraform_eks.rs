//! Terraform with the real aws provider (5.100.0, from the machine image's
//! filesystem mirror) against kemu's EKS facade, with moto_server beside it
//! for IAM, EC2 and STS: scripts/e2e-terraform's init, apply, plan (no
//! changes), cluster access through the endpoint and CA terraform read,
//! drift made with the aws CLI, an in-place change, import into a fresh state
//! and destroy. The script prints the step table; every step must pass.

mod common;

use common::{Sandbox, text};

#[test]
fn terraform_applies_reads_imports_and_destroys_an_eks_module() {
    let sandbox = Sandbox::new();
    for tool in ["terraform", "moto_server", "aws", "kubectl"] {
        common::which(tool);
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new(root.join("scripts/e2e-terraform"))
        .arg("eks")
        .env("KEMU_BIN", env!("CARGO_BIN_EXE_kemu"))
        .env("E2E_TERRAFORM_DIR", sandbox.path("e2e"))
        .output()
        .expect("run scripts/e2e-terraform");
    let shown = text(&out);
    let log = std::fs::read_to_string(sandbox.path("e2e/eks/steps.log")).unwrap_or_default();
    let tail: String = log
        .lines()
        .rev()
        .take(60)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        out.status.success(),
        "{shown}\n--- steps.log (last lines)\n{tail}"
    );
    for step in [
        "apply", "plan", "cluster", "drift", "change", "import", "destroy",
    ] {
        assert!(
            shown.lines().any(|l| l.starts_with("eks")
                && l.split_whitespace().nth(1) == Some(step)
                && l.ends_with(" ok")),
            "step {step} missing from the table:\n{shown}"
        );
    }
}
