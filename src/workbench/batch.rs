//! `kyozume solve --batch FILE`: one problem a line, each solved with its own limits; a result
//! line (or JSON line) per problem written and flushed as soon as it is known, so an
//! interrupted run loses nothing already reported; a summary at the end.
//!
//! Lines: an SFEN (or `position ...`), or tab-separated with the name first, the SFEN second and,
//! optionally, the problem's stipulation third (`HS#`, `協力自玉詰`, `受先ばか詰`, `安南協力詰`,
//! conditions alone such as `禁欲`), with its stated length after it or in a column of its own
//! (`協力自玉詰 9手`, `9手`: a length is written with 手, so that a bare number, such as the
//! reference data files' length, is not one). Columns that name neither are ignored. Empty
//! lines, `#` comments and a `name<TAB>sfen...` header are skipped.

use super::{all_ranks_ready, exit, interrupt_flag, prints, solve_position, SolveOptions};
use crate::problem as input;
use crate::report::{Report, Status};
use crate::search;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

/// One problem of the batch file: its line number, name if any, and the problem text.
struct Entry {
    line: usize,
    name: Option<String>,
    text: String,
    /// The stipulation its third column names, if any.
    stipulation: Option<crate::shogi::Stipulation>,
    /// The length it states (see the module's comment), if any.
    length: Option<u32>,
}

/// The stipulation and the stated length the columns after the SFEN name, if they do.
fn stated(columns: &[&str]) -> (Option<crate::shogi::Stipulation>, Option<u32>) {
    use crate::shogi::stipulation::parse_length;
    use crate::shogi::Stipulation;
    let (mut stipulation, mut length) = (None, None);
    for (i, column) in columns.iter().map(|c| c.trim()).enumerate() {
        if i == 0 {
            if let Ok((s, plies)) = Stipulation::parse_stated(column) {
                stipulation = Some(s);
                length = length.or(plies);
                continue;
            }
        }
        if column.ends_with('手') && length.is_none() {
            length = parse_length(column);
        }
    }
    (stipulation, length)
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
                let (stipulation, length) = stated(&fields[2..]);
                return Some(Entry {
                    line: i + 1,
                    name: Some(fields[0].trim().to_string()),
                    text: fields[1].trim().to_string(),
                    stipulation,
                    length,
                });
            }
            Some(Entry {
                line: i + 1,
                name: None,
                text: t.to_string(),
                stipulation: None,
                length: None,
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
    /// No solution within the problem's bound (longer ones not searched): not "no helpmate".
    none_within_bound: usize,
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
            Status::NoMate if r.max_plies.is_some() => self.none_within_bound += 1,
            Status::NoMate => self.no_helpmate += 1,
            Status::Unsolved => self.unsolved += 1,
            Status::Error => self.errors += 1,
        }
    }

    fn text(&self) -> String {
        format!(
            "summary: {} problems: solved {} (unique {}, cooked {}), no helpmate {}, none within the bound {}, unsolved {}, errors {}{}, time {:.3} s",
            self.problems,
            self.solved,
            self.unique,
            self.cooked,
            self.no_helpmate,
            self.none_within_bound,
            self.unsolved,
            self.errors,
            if self.interrupted { ", interrupted" } else { "" },
            self.time_s
        )
    }
}

/// Solves (or reports the input error of) one entry.
fn solve_entry(
    solver: &mut crate::search::Solver,
    entry: &Entry,
    options: &SolveOptions,
    stop: &AtomicBool,
) -> Report {
    let stipulation = options.stipulation_for(entry.stipulation);
    match input::parse_problem_under(&entry.text, options.format, stipulation.rules()) {
        Err(e) => Report::input_error(
            entry.name.clone(),
            &entry.text,
            format!("line {}: {e}", entry.line),
        ),
        Ok(position) => solve_position(
            solver,
            entry.name.clone(),
            (&position, stipulation, options.length_for(entry.length)),
            options,
            stop,
        ),
    }
}

/// Reads a batch file's problems as `run` does before solving them (each line's SFEN, under
/// the stipulation its columns name, and its stated length); the errors are those `run`
/// reports. For the fuzz targets.
#[doc(hidden)]
pub fn read(
    text: &str,
    format: input::Format,
) -> Vec<Result<(crate::shogi::Position, Option<u32>), String>> {
    entries(text)
        .iter()
        .map(|entry| {
            let rules = entry.stipulation.unwrap_or_default().rules();
            match input::parse_problem_under(&entry.text, format, rules) {
                Ok(position) => Ok((position, entry.length)),
                Err(e) => Err(format!("line {}: {e}", entry.line)),
            }
        })
        .collect()
}

/// Runs the batch; returns the exit status. With `options.jobs` above 1, that many problems are
/// solved at once, each solver with its share of the memory and of the threads; results are
/// still written in input order. With ranks (`--distributed`), every rank reads the file and
/// takes the problems one at a time in step with the others; rank 0 writes.
pub fn run(file: &str, options: &SolveOptions) -> u8 {
    let text = match std::fs::read(file) {
        Ok(bytes) => Some(input::decode(&bytes)),
        Err(e) => {
            eprintln!("kyozume solve --batch: cannot read {file}: {e}");
            None
        }
    };
    let read = all_ranks_ready(options, text.is_some());
    let text = match text {
        Some(text) if read => text,
        Some(_) => {
            eprintln!("kyozume solve --batch: another rank could not read {file}");
            return exit::BAD_INPUT;
        }
        None => return exit::BAD_INPUT,
    };
    let entries = entries(&text);
    let jobs = match options.ranks {
        Some(_) => 1,
        None => options.jobs.clamp(1, entries.len().max(1)),
    };
    let per_job = SolveOptions {
        engine: crate::config::EngineConfig {
            hash_mb: (options.engine.hash_mb / jobs).max(1),
            threads: (options.engine.threads / jobs).max(1),
            disk_cap_mb: options.engine.disk_cap_mb / jobs,
            ..options.engine.clone()
        },
        ..options.clone()
    };
    let mut solvers = Vec::with_capacity(jobs);
    let mut failed = None;
    for _ in 0..jobs {
        match super::solver_for(&per_job, "kyozume solve --batch") {
            Ok(s) => solvers.push(s),
            Err(status) => {
                failed = Some(status);
                break;
            }
        }
    }
    if !all_ranks_ready(options, failed.is_none()) {
        if failed.is_none() {
            eprintln!("kyozume solve --batch: another rank could not start");
        }
        return failed.unwrap_or(exit::BAD_INPUT);
    }
    let stop = interrupt_flag();
    // Ranks go on to the next problem together: a stop seen by one is taken by all.
    let stopped = || {
        let here = stop.load(Ordering::SeqCst);
        // (Every rank asks, whatever it saw; without ranks only this process's flag counts.)
        let elsewhere = !all_ranks_ready(options, !here);
        here || elsewhere
    };
    let writes = prints(options);
    let start = Instant::now();
    let bar = (writes && std::io::stderr().is_terminal()).then(|| {
        let bar = ProgressBar::new(entries.len() as u64);
        bar.set_style(
            ProgressStyle::with_template("[{elapsed_precise}] {bar:40} {pos}/{len} {msg}")
                .expect("progress template"),
        );
        bar
    });
    let label = |entry: &Entry| {
        entry
            .name
            .clone()
            .unwrap_or_else(|| format!("line {}", entry.line))
    };
    let mut summary = Summary::default();
    let mut out = std::io::stdout().lock();
    let mut write_failed = false;
    let mut write = |report: &Report, summary: &mut Summary, out: &mut std::io::StdoutLock| {
        summary.add(report);
        if !writes {
            return;
        }
        let line = if options.json {
            report.json()
        } else {
            report.summary_line()
        };
        // Written and flushed at once: nothing reported is lost if the run is interrupted.
        write_failed |= writeln!(out, "{line}").and_then(|_| out.flush()).is_err();
    };
    let next = AtomicUsize::new(0);
    let (done_tx, done) = crossbeam_channel::unbounded::<(usize, Report)>();
    std::thread::scope(|scope| {
        for mut solver in solvers {
            let done_tx = done_tx.clone();
            let (entries, next, stopped, per_job, bar) =
                (&entries, &next, &stopped, &per_job, &bar);
            let stop = &stop;
            std::thread::Builder::new()
                .name("batch".into())
                .stack_size(search::SEARCH_STACK_BYTES)
                .spawn_scoped(scope, move || loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= entries.len() || stopped() {
                        break;
                    }
                    match bar {
                        Some(b) => b.set_message(label(&entries[i])),
                        None if writes => {
                            eprintln!("[{}/{}] {} ...", i + 1, entries.len(), label(&entries[i]))
                        }
                        None => {}
                    }
                    let report = solve_entry(&mut solver, &entries[i], per_job, stop);
                    if done_tx.send((i, report)).is_err() {
                        break;
                    }
                })
                .expect("spawn a batch thread");
        }
        drop(done_tx);
        // Results in input order: each written once those before it are.
        let mut pending: BTreeMap<usize, Report> = BTreeMap::new();
        let mut next_out = 0;
        for (i, report) in done.iter() {
            if stop.load(Ordering::SeqCst) && report.status == Status::Unsolved {
                // Cut short by Ctrl-C: not a verdict on the problem.
                summary.interrupted = true;
                continue;
            }
            match &bar {
                Some(b) => b.inc(1),
                None if writes => eprintln!(
                    "[{}/{}] {}: {:?} ({:.3} s)",
                    i + 1,
                    entries.len(),
                    label(&entries[i]),
                    report.status,
                    report.time_ms as f64 / 1000.0
                ),
                None => {}
            }
            pending.insert(i, report);
            while let Some(r) = pending.remove(&next_out) {
                write(&r, &mut summary, &mut out);
                next_out += 1;
            }
        }
        // Interrupted: every finished result still goes out, in input order.
        for r in std::mem::take(&mut pending).into_values() {
            write(&r, &mut summary, &mut out);
        }
    });
    if write_failed {
        eprintln!("kyozume solve --batch: cannot write the results to stdout");
        return exit::OUTPUT_LOST;
    }
    summary.interrupted |= stop.load(Ordering::SeqCst);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    summary.time_s = start.elapsed().as_secs_f64();
    let last = if options.json {
        serde_json::json!({ "summary": summary }).to_string()
    } else {
        summary.text()
    };
    if writes {
        let _ = writeln!(out, "{last}").and_then(|_| out.flush());
        eprintln!("{}", summary.text());
    }
    if summary.interrupted {
        exit::INTERRUPTED
    } else {
        exit::SOLVED
    }
}
