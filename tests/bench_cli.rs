//! `kemu bench` as a user runs it: it starts its own kemu processes, runs the
//! cases asked for and prints the table. Asserts the table's shape, never a
//! figure.

use std::process::Command;

#[test]
fn kemu_bench_prints_a_row_per_case_it_ran() {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kemu"))
        .args(["bench", "--runs", "1", "--pods", "200", "--objects", "500"])
        .args(["--cases", "get,watch,memory,pods"])
        .env("HOME", home.path())
        .env("TMPDIR", home.path())
        .env_remove("KUBECONFIG")
        .output()
        .expect("kemu bench runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "kemu bench failed:\n{stderr}\n{stdout}"
    );
    for row in [
        "| GET one ConfigMap, 1 connection | req/s | ",
        "| GET one ConfigMap, 16 connections | req/s | ",
        "| watch: 100 watchers, 500 creates/s, p99 | ms | ",
        "| RSS per small ConfigMap (500 per run) | bytes | ",
        "| 200 Pods Available (Deployment created → available) | s | ",
        "| 200 Pods gone (scaled to 0 → none left) | s | ",
        "| peak RSS over that run | MiB | ",
    ] {
        assert!(stdout.contains(row), "no row {row:?} in:\n{stdout}");
    }
    for skipped in [
        "LIST of that namespace",
        "ServiceAccount token",
        "create ConfigMaps",
    ] {
        assert!(
            !stdout.contains(skipped),
            "{skipped} was not asked for:\n{stdout}"
        );
    }
    assert!(
        stdout.contains("(not given)"),
        "no peer was given, and the table says so:\n{stdout}"
    );
    // Every process it started is gone with it.
    let left = std::fs::read_dir(home.path())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("kemu-bench-"))
        .count();
    assert_eq!(left, 0, "its scratch directory is removed");
}
