//! Progress of a long load (replaying a state directory, restoring a
//! snapshot) on stderr: a bar when stderr is a terminal, a few plain lines
//! otherwise (logs, CI).

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// Reports bytes read out of a known total.
#[derive(Debug)]
pub struct Progress {
    label: String,
    total: u64,
    done: u64,
    bar: Option<ProgressBar>,
    /// Next tenth (plain lines) to report.
    next_tenth: u64,
    quiet: bool,
}

impl Progress {
    /// Starts reporting `label` over `total` bytes.
    pub fn new(label: &str, total: u64) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total);
            bar.set_style(
                ProgressStyle::with_template("{msg} [{bar:40}] {bytes}/{total_bytes} ({eta} left)")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            bar.set_message(label.to_owned());
            bar
        });
        if bar.is_none() {
            eprintln!("kemu: {label}: {} to read", human(total));
        }
        Self {
            label: label.to_owned(),
            total,
            done: 0,
            bar,
            next_tenth: 1,
            quiet: false,
        }
    }

    /// A reporter that prints nothing (tests, tiny loads).
    pub fn quiet() -> Self {
        Self {
            label: String::new(),
            total: 0,
            done: 0,
            bar: None,
            next_tenth: 11,
            quiet: true,
        }
    }

    /// `bytes` more were read.
    pub fn advance(&mut self, bytes: u64) {
        self.done += bytes;
        if let Some(bar) = &self.bar {
            bar.set_position(self.done);
            return;
        }
        while !self.quiet
            && self.next_tenth <= 10
            && self.total > 0
            && self.done * 10 >= self.total * self.next_tenth
        {
            eprintln!(
                "kemu: {}: {}% ({} of {})",
                self.label,
                self.next_tenth * 10,
                human(self.done),
                human(self.total)
            );
            self.next_tenth += 1;
        }
    }

    /// Done: clears the bar and says what was loaded.
    pub fn finish(self, summary: &str) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        if !self.quiet {
            eprintln!("kemu: {}: done, {summary}", self.label);
        }
    }
}

fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / f64::from(1 << 20)),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / f64::from(1 << 10)),
        b => format!("{b} B"),
    }
}
