//! The breadth-first pass's key stores for when memory runs short, forced on: the keys frozen
//! after every level, and the keys of all but one level in 2, 4 or 8 let go of two levels
//! after they were frozen, so that positions are forgotten and met again as new ("ghosts",
//! expanded again) all the time. Lengths, counts and lines must not change; the extra positions kept show that ghosts
//! did occur.

mod common;

use common::{helpmates, nomates};
use kyozume::search::{
    verify_helpmate, Forgetting, Limits, Outcome, PassTuning, SearchResult, Solutions, Solver,
    Strategy,
};
use kyozume::shogi::Position;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// The answer to `sfen` under `limits` with `hash_mb` of memory, and the positions the pass
/// kept over all its levels.
fn solve(hash_mb: usize, sfen: &str, limits: &Limits) -> (Outcome, Option<Solutions>, usize) {
    let pos = Position::from_sfen(sfen).unwrap();
    let mut solver = Solver::new(hash_mb).unwrap();
    let stop = AtomicBool::new(false);
    let (log, levels) = crossbeam_channel::unbounded();
    let limits = Limits {
        level_log: Some(log),
        ..limits.clone()
    };
    let result: SearchResult =
        kyozume::search::with_search_stack(|| solver.solve(&pos, &limits, &stop, &mut |_| {}))
            .unwrap();
    drop(limits);
    let kept = levels.iter().map(|l| l.positions).sum();
    (result.outcome, result.solutions, kept)
}

#[test]
fn forgetting_keeps_every_length_count_and_line() {
    let mut rows: Vec<(String, String)> = helpmates()
        .into_iter()
        .filter(|p| p.plies <= 120)
        .map(|p| (p.name, p.sfen))
        .collect();
    let helpmate_rows = rows.len();
    rows.extend(nomates());
    assert!(helpmate_rows >= 100, "{helpmate_rows} rows");
    let mut ghosted = 0;
    for (i, (name, sfen)) in rows.iter().enumerate() {
        // Every other row at two threads, every level through the threaded expansion; every
        // third with the narrow loop off.
        let limits = Limits {
            strategy: Strategy::BreadthFirst,
            solution_limit: 5,
            threads: 1 + i % 2,
            tuning: match i % 3 {
                // (The narrow loop off.)
                0 => PassTuning {
                    narrow_below: 0,
                    ..PassTuning::threads_on_every_level()
                },
                _ => PassTuning::threads_on_every_level(),
            }
            .into(),
            ..Default::default()
        };
        let (outcome, solutions, kept) = solve(64, sfen, &limits);
        let forced = Limits {
            tuning: limits.tuning.clone().with_pass(PassTuning {
                freeze_every_level: true,
                // Every third row keeps every eighth level for good, every third every fourth:
                // ghosts of ghosts go on for up to seven levels.
                forgetting: Forgetting {
                    kept_for: 2,
                    keep_every: [2, 4, 8][i / 2 % 3],
                },
                ..limits.tuning.pass.clone()
            }),
            ..limits
        };
        let (forced_outcome, forced_solutions, forced_kept) = solve(64, sfen, &forced);
        assert_eq!(forced_outcome, outcome, "{name}");
        assert_eq!(forced_solutions, solutions, "{name}");
        if let Outcome::Mate(line) = &forced_outcome {
            verify_helpmate(&Position::from_sfen(sfen).unwrap(), line).unwrap();
        }
        assert!(forced_kept >= kept, "{name}: {forced_kept} < {kept}");
        ghosted += usize::from(forced_kept > kept);
    }
    // Ghosts happen on most problems longer than a few levels.
    assert!(ghosted >= 40, "{ghosted} rows met forgotten positions");
}

/// Short of memory (16 MB for 森茂 1965, keys frozen during levels too, links on disk), with
/// transient keys let go of two levels after they were frozen: the same answer at one and
/// two threads as with memory to spare. (Where the pass gives up for memory, deepening goes
/// on for hours: the time limit makes that a failure.)
#[test]
fn forgetting_when_memory_runs_short_keeps_the_answer() {
    let sfen = helpmates()
        .into_iter()
        .find(|p| p.name == "fmrs_morishige_1965")
        .unwrap()
        .sfen;
    let roomy = Limits {
        strategy: Strategy::BreadthFirst,
        solution_limit: 3,
        ..Default::default()
    };
    let (outcome, solutions, kept) = solve(64, &sfen, &roomy);
    for threads in [1, 2] {
        let dir = tempfile::tempdir().unwrap();
        let tight = Limits {
            threads,
            time: Some(Duration::from_secs(300)),
            tuning: PassTuning {
                forgetting: Forgetting {
                    kept_for: 2,
                    keep_every: 2,
                },
                ..PassTuning::default()
            }
            .into(),
            disk: kyozume::search::DiskBudget {
                dir: Some(dir.path().to_path_buf()),
                cap_bytes: 1 << 30,
                always: false,
            },
            ..roomy.clone()
        };
        let (tight_outcome, tight_solutions, tight_kept) = solve(16, &sfen, &tight);
        assert_eq!(tight_outcome, outcome, "{threads} threads");
        assert_eq!(tight_solutions, solutions, "{threads} threads");
        assert!(
            tight_kept > kept,
            "{threads} threads: {tight_kept} <= {kept}"
        );
    }
}
