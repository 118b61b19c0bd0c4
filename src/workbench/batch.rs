//! `kyozume solve --batch FILE`: one problem a line, each solved with its own limits; a result
//! line (or JSON line) per problem written and flushed as soon as it is known, so an
//! interrupted run loses nothing already reported; a summary at the end.
//!
//! Lines: an SFEN (or `position ...`), or tab-separated with the name first and the SFEN second
//! (further columns ignored, as in the reference data files). Empty lines, `#` comments and a
//! `name<TAB>sfen...` header are skipped.

use super::report::{Report, Status};
use super::{exit, input, interrupt_flag, solve_position, SolveOptions};
use crate::search;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::io::{IsTerminal, Write};
use std::sync::atomic::Ordering;
use std::time::Instant;

/// One problem of the batch file: its line number, name if any, and the problem text.
struct Entry {
    line: usize,
    name: Option<String>,
    text: String,
}

fn entries(text: &str) -> Vec<Entry> {
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let l = l.trim_end_matches('\r');
            let t = l.trim();
            if t.is_empty() || t.starts_with('#') {
                return None;
            }
            let fields: Vec<&str> = l.split('\t').collect();
            if fields.len() >= 2 {
                if fields[1].trim() == "sfen" {
                    return None; // header
                }
                return Some(Entry {
                    line: i + 1,
                    name: Some(fields[0].trim().to_string()),
                    text: fields[1].trim().to_string(),
                });
            }
            Some(Entry {
                line: i + 1,
                name: None,
                text: t.to_string(),
            })
        })
        .collect()
}

#[derive(Default, Serialize)]
struct Summary {
    problems: usize,
    solved: usize,
    unique: usize,
    cooked: usize,
    no_helpmate: usize,
    unsolved: usize,
    errors: usize,
    interrupted: bool,
    time_s: f64,
}

impl Summary {
    fn add(&mut self, r: &Report) {
        self.problems += 1;
        match r.status {
            Status::Mate => {
                self.solved += 1;
                match r.unique {
                    Some(true) => self.unique += 1,
                    Some(false) => self.cooked += 1,
                    None => {}
                }
            }
            Status::NoMate => self.no_helpmate += 1,
            Status::Unsolved => self.unsolved += 1,
            Status::Error => self.errors += 1,
        }
    }

    fn text(&self) -> String {
        format!(
            "summary: {} problems: solved {} (unique {}, cooked {}), no helpmate {}, unsolved {}, errors {}{}, time {:.3} s",
            self.problems,
            self.solved,
            self.unique,
            self.cooked,
            self.no_helpmate,
            self.unsolved,
            self.errors,
            if self.interrupted { ", interrupted" } else { "" },
            self.time_s
        )
    }
}

/// Runs the batch; returns the exit status.
pub fn run(file: &str, options: &SolveOptions) -> u8 {
    let text = match std::fs::read(file) {
        Ok(bytes) => input::decode(&bytes),
        Err(e) => {
            eprintln!("kyozume solve --batch: cannot read {file}: {e}");
            return exit::BAD_INPUT;
        }
    };
    let entries = entries(&text);
    let mut solver = match super::solver_for(options, "kyozume solve --batch") {
        Ok(s) => s,
        Err(status) => return status,
    };
    let stop = interrupt_flag();
    let start = Instant::now();
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = ProgressBar::new(entries.len() as u64);
        bar.set_style(
            ProgressStyle::with_template("[{elapsed_precise}] {bar:40} {pos}/{len} {msg}")
                .expect("progress template"),
        );
        bar
    });
    let mut summary = Summary::default();
    let mut out = std::io::stdout().lock();
    for (i, entry) in entries.iter().enumerate() {
        if stop.load(Ordering::SeqCst) {
            summary.interrupted = true;
            break;
        }
        let label = entry
            .name
            .clone()
            .unwrap_or_else(|| format!("line {}", entry.line));
        match &bar {
            Some(b) => b.set_message(label.clone()),
            None => eprintln!("[{}/{}] {label} ...", i + 1, entries.len()),
        }
        let report = match input::parse_problem(&entry.text, options.format) {
            Err(e) => Report::input_error(
                entry.name.clone(),
                &entry.text,
                format!("line {}: {e}", entry.line),
            ),
            Ok(position) => search::with_search_stack(|| {
                solve_position(&mut solver, entry.name.clone(), &position, options, &stop)
            }),
        };
        if stop.load(Ordering::SeqCst) && report.status == Status::Unsolved {
            // Cut short by Ctrl-C: not a verdict on the problem.
            summary.interrupted = true;
            break;
        }
        summary.add(&report);
        let line = if options.json {
            report.json()
        } else {
            report.summary_line()
        };
        // Written and flushed at once: nothing reported is lost if the run is interrupted.
        if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
            return exit::BAD_INPUT;
        }
        match &bar {
            Some(b) => b.inc(1),
            None => eprintln!(
                "[{}/{}] {label}: {:?} ({:.3} s)",
                i + 1,
                entries.len(),
                report.status,
                report.time_ms as f64 / 1000.0
            ),
        }
    }
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    summary.time_s = start.elapsed().as_secs_f64();
    let last = if options.json {
        serde_json::json!({ "summary": summary }).to_string()
    } else {
        summary.text()
    };
    let _ = writeln!(out, "{last}").and_then(|_| out.flush());
    eprintln!("{}", summary.text());
    if summary.interrupted {
        exit::INTERRUPTED
    } else {
        exit::SOLVED
    }
}
