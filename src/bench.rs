//! `kyozume bench`: solves a fixed suite of helpmates and reports nodes, time and speed. This is
//! how the engine's speed is measured (tests never time anything).

use crate::search::{verify_helpmate, Limits, Outcome, Solver};
use crate::shogi::movegen::MoveList;
use crate::shogi::Position;
use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// The suite: problems copied from the shared reference data with their source column.
const SUITE: &str = include_str!("../bench/suite.tsv");

pub struct BenchProblem {
    pub long: bool,
    pub name: &'static str,
    pub sfen: &'static str,
    pub plies: u32,
}

pub fn suite() -> Vec<BenchProblem> {
    SUITE
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("group\t") && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&'static str> = l.split('\t').collect();
            BenchProblem {
                long: f[0] == "long",
                name: f[1],
                sfen: f[2],
                plies: f[3].parse().expect("plies in bench/suite.tsv"),
            }
        })
        .collect()
}

pub struct BenchOptions {
    pub long: bool,
    pub hash_mb: usize,
    pub threads: usize,
    pub time_limit: Option<Duration>,
    /// Only problems whose name contains this.
    pub filter: Option<String>,
}

/// Runs the suite, printing one line per problem and a total. Returns false if any answer was
/// wrong (a different length than published, or a line that does not replay).
pub fn run(options: &BenchOptions, out: &mut dyn Write) -> std::io::Result<bool> {
    let problems: Vec<BenchProblem> = suite()
        .into_iter()
        .filter(|p| p.long == options.long)
        .filter(|p| {
            options
                .filter
                .as_ref()
                .is_none_or(|f| p.name.contains(f.as_str()))
        })
        .collect();
    let mut solver = Solver::new(options.hash_mb).map_err(std::io::Error::other)?;
    writeln!(
        out,
        "{:<40} {:>7} {:>7} {:>8} {:>7} {:>14} {:>10} {:>12} {:>9}",
        "problem",
        "plies",
        "found",
        "hash(MB)",
        "threads",
        "nodes",
        "time(s)",
        "nodes/s",
        "peak(MB)"
    )?;
    let stop = AtomicBool::new(false);
    let (mut total_nodes, mut total_secs, mut solved, mut all_right) = (0u64, 0f64, 0, true);
    for p in &problems {
        let pos = Position::from_sfen(p.sfen).expect("bench SFEN parses");
        // Each problem from a clean table, so that times do not depend on the order. The long
        // problems get a fresh solver, as `kyozume solve` does, so that the memory one touched
        // is released before the next and each peak is its own.
        if options.long {
            drop(solver);
            solver = Solver::new_lazy(options.hash_mb).map_err(std::io::Error::other)?;
        } else {
            solver.clear();
        }
        peak_memory::reset();
        let limits = Limits {
            time: options.time_limit,
            max_plies: None,
            threads: options.threads,
            ..Default::default()
        };
        let r = solver
            .solve(&pos, &limits, &stop, &mut |_| {})
            .expect("bench problems have a defender king");
        let secs = r.elapsed.as_secs_f64();
        let found = match &r.outcome {
            Outcome::Mate(line) => {
                let ok = line.len() as u32 == p.plies && verify_helpmate(&pos, line).is_ok();
                all_right &= ok;
                solved += ok as usize;
                format!("{}{}", line.len(), if ok { "" } else { " WRONG" })
            }
            Outcome::NoMate => {
                all_right = false;
                "nomate WRONG".to_string()
            }
            Outcome::Unknown { .. } => "-".to_string(),
        };
        total_nodes += r.nodes;
        total_secs += secs;
        let peak = peak_memory::megabytes().map_or("-".to_string(), |mb| mb.to_string());
        writeln!(
            out,
            "{:<40} {:>7} {:>7} {:>8} {:>7} {:>14} {:>10.3} {:>12.0} {:>9}",
            p.name,
            p.plies,
            found,
            options.hash_mb,
            options.threads,
            r.nodes,
            secs,
            r.nodes as f64 / secs.max(1e-9),
            peak
        )?;
    }
    writeln!(
        out,
        "total: solved {solved}/{} nodes {total_nodes} time {total_secs:.3} s nodes/s {:.0}",
        problems.len(),
        total_nodes as f64 / total_secs.max(1e-9)
    )?;
    Ok(all_right)
}

/// The process's peak resident memory, per problem: on Linux the kernel's high-water mark
/// (`VmHWM`), reset before each problem through `/proc/self/clear_refs`. Elsewhere nothing is
/// reported. Tables are mapped lazily, so this is the memory a problem really touched, not the
/// hash size.
mod peak_memory {
    /// Starts a new high-water mark (best effort: without it the figure is the peak so far).
    pub fn reset() {
        #[cfg(target_os = "linux")]
        let _ = std::fs::write("/proc/self/clear_refs", "5");
    }

    /// The high-water mark in MB, if the system tells it.
    pub fn megabytes() -> Option<u64> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb.div_ceil(1024))
    }
}

/// Generating checks directly against generating every legal move and keeping those that give
/// check, over attacker positions of the suite reached by random helpmate-style playouts.
/// Prints both speeds; the direct generator must be the faster.
pub fn run_checks(out: &mut dyn Write) -> std::io::Result<bool> {
    use crate::shogi::movegen::{self, MoveList};
    let mut positions = Vec::new();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for p in suite().iter().cycle().take(2000) {
        let mut pos = Position::from_sfen(p.sfen).expect("bench SFEN parses");
        for _ in 0..400 {
            positions.push(pos.clone());
            let mut list = MoveList::new();
            movegen::checks(&pos, &mut list);
            if list.is_empty() {
                break;
            }
            pos.do_move(list[(next() % list.len() as u64) as usize]);
            list.clear();
            movegen::evasions(&pos, &mut list);
            if list.is_empty() {
                break;
            }
            pos.do_move(list[(next() % list.len() as u64) as usize]);
        }
    }
    let rounds = 20;
    let (direct, direct_secs) = time_rounds(&positions, rounds, |pos, list| {
        movegen::checks(pos, list);
        list.len()
    });
    let (filtered, filtered_secs) = time_rounds(&positions, rounds, |pos, list| {
        movegen::legal(pos, list);
        let ci = pos.check_info();
        list.iter()
            .filter(|&&m| {
                ci.as_ref()
                    .is_some_and(|ci| movegen::gives_check_with(pos, ci, m))
            })
            .count()
    });
    let calls = (positions.len() * rounds) as f64;
    writeln!(
        out,
        "{} attacker positions x {rounds}: checks generated directly {:.0} ns/position, \
         all legal moves filtered by gives_check {:.0} ns/position ({:.1}x); {} checks each way",
        positions.len(),
        direct_secs / calls * 1e9,
        filtered_secs / calls * 1e9,
        filtered_secs / direct_secs,
        direct / rounds
    )?;
    Ok(direct == filtered && direct_secs < filtered_secs)
}

/// Total checks found by `find` over every position, `rounds` times, and the seconds taken
/// (generic, so that each generator is timed inlined, as the search calls it).
fn time_rounds(
    positions: &[Position],
    rounds: usize,
    mut find: impl FnMut(&Position, &mut MoveList) -> usize,
) -> (usize, f64) {
    let mut list = MoveList::new();
    let start = std::time::Instant::now();
    let mut found = 0usize;
    for _ in 0..rounds {
        for pos in positions {
            list.clear();
            found += find(pos, &mut list);
        }
    }
    (found, start.elapsed().as_secs_f64())
}
