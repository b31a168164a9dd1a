//! Nothing outside the clock module reads wall time: every part is handed a
//! `Clock`, so tests can advance a fake one.

use std::path::Path;

const FORBIDDEN: [&str; 4] = ["Utc::now", "SystemTime::now", "Instant::now", "Local::now"];

fn scan(dir: &Path, hits: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            scan(&path, hits);
        } else if path.extension().is_some_and(|e| e == "rs")
            && !path.ends_with("shared/src/clock.rs")
        {
            let text = std::fs::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                for f in FORBIDDEN {
                    if line.contains(f) {
                        hits.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                    }
                }
            }
        }
    }
}

#[test]
fn wall_clock_is_read_only_by_the_clock_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut hits = Vec::new();
    for dir in [
        "src",
        "shared/src",
        "dataplane",
        "providers",
        "tests",
        "examples",
    ] {
        let dir = root.join(dir);
        if dir.exists() {
            scan(&dir, &mut hits);
        }
    }
    // This file names the calls it forbids.
    hits.retain(|h| !h.contains("no_wall_clock.rs"));
    assert!(
        hits.is_empty(),
        "wall time read outside the clock:\n{}",
        hits.join("\n")
    );
}
