//! The search thread: it owns the solver and its table, and does the loop thread's jobs in the
//! order they were sent, so every reply comes out in the order of the commands.

use super::shared::Shared;
use super::words::{info_line, report_result, stipulation_words};
use super::Output;
use crate::search::{Limits, SearchError, Solver};
use crate::shogi::Position;
use crossbeam_channel::Receiver;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Work for the search thread, in the order the GUI sent it.
pub(super) enum Job {
    Go {
        /// Numbered from 1 in arrival order, so that a `stop` ends exactly the `go`s before it.
        id: u64,
        position: Box<Position>,
        limits: Box<Limits>,
    },
    /// Protocol lines to print once the jobs before them are done.
    Lines(Vec<String>),
    /// `probe`: what the table knows about a position.
    Probe(Box<Position>),
    Resize(usize),
    Clear,
    /// Answer `readyok` once the jobs before it (a table resize, say) are done, with the
    /// table made and the search threads started for `threads`.
    Ready {
        threads: usize,
    },
    Quit,
}

pub(super) fn search_loop(jobs: Receiver<Job>, shared: &Shared, out: &Output, hash_mb: usize) {
    // The table is made at the first `isready` or `go` (a GUI expects the long work there), so
    // `usi` is answered at once.
    let mut hash_mb = hash_mb;
    let mut table: Option<Solver> = None;
    let make_solver = |hash_mb: usize| -> Solver {
        match Solver::new(hash_mb) {
            Ok(s) => s,
            Err(e) => {
                out.error(&format!("{e}; using 16 MB"));
                Solver::new(16).expect("a 16 MB table")
            }
        }
    };
    for job in jobs.iter() {
        if out.is_broken() {
            shared.quit_now();
            break;
        }
        // After `quit` or a signal the queue is drained without doing the work: every `go`
        // still gets its one reply, and what was queued before is printed in order.
        let quitting = shared.quitting.load(Ordering::SeqCst);
        match job {
            Job::Quit => break,
            Job::Clear if !quitting => {
                if let Some(solver) = table.as_mut() {
                    solver.clear();
                }
            }
            Job::Resize(mb) if !quitting => match table.as_mut() {
                Some(solver) => {
                    if let Err(e) = solver.resize(mb) {
                        out.error(&format!("{e}; keeping {} MB", solver.hash_mb()));
                    }
                }
                None => hash_mb = mb,
            },
            Job::Probe(position) if !quitting => {
                let solver = table.get_or_insert_with(|| make_solver(hash_mb));
                let attacker = solver.last_attacker().unwrap_or(position.side_to_move());
                let problem = (attacker, solver.last_stipulation());
                let report = solver.probe(&position, problem, PROBE_TIME, &shared.quitting);
                for l in report.lines(&position, problem.1) {
                    out.line(&format!("info string {l}"));
                }
            }
            Job::Clear | Job::Resize(_) | Job::Probe(_) => {}
            Job::Ready { threads } => {
                // The long work a GUI expects here: the table written, the threads started and
                // the caches made (a first `go` that made them took a millisecond more).
                table
                    .get_or_insert_with(|| make_solver(hash_mb))
                    .prepare(threads);
                out.line("readyok");
            }
            Job::Lines(lines) => lines.iter().for_each(|l| out.line(l)),
            Job::Go { id, .. } if quitting => {
                shared.begin(id, out);
                shared.end();
                out.line("checkmate timeout");
            }
            Job::Go {
                id,
                position,
                limits,
            } => {
                shared.begin(id, out);
                out.line(&format!(
                    "info string stipulation {}{}",
                    stipulation_words(limits.stipulation),
                    limits
                        .max_plies
                        .map_or(String::new(), |n| format!(" max_plies {n}"))
                ));
                let solver = table.get_or_insert_with(|| make_solver(hash_mb));
                let result = solver.solve(&position, &limits, &shared.stop, &mut |p| {
                    if let Some(plies) = p.resumed_from {
                        out.line(&format!(
                            "info string resumed from a checkpoint at {plies} plies"
                        ));
                    }
                    out.line(&info_line(p));
                    if out.is_broken() {
                        // Nobody reads the answer any more.
                        shared.stop.store(true, Ordering::SeqCst);
                    }
                });
                // Answered before the line goes out: a GUI may send `isready` as soon as it
                // reads `checkmate`, and that one waits for the queue like any other.
                shared.end();
                match result {
                    Ok(r) => report_result(out, &r, &limits),
                    Err(e @ (SearchError::NoDefenderKing | SearchError::NoAttackerKing)) => {
                        out.error(&e.to_string());
                        out.line("checkmate nomate");
                    }
                    // Nothing proven about a mate: like a search that ran out of time.
                    Err(e @ SearchError::Disk(_)) => {
                        out.error(&e.to_string());
                        out.line("checkmate timeout");
                    }
                }
            }
        }
    }
}

/// How long `probe` searches for the shortest line from the position.
const PROBE_TIME: Duration = Duration::from_secs(2);
