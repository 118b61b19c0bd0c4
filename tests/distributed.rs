//! The breadth-first pass shared among ranks (here threads of this process, each with its own
//! solver, talking through `LocalRank`): at 2 ranks of two threads and 3 ranks of one (the
//! levels numbered by ranges of their parents, or by gathering every rank's), every
//! rank gives the same length, count and lines as one process's pass, on every test row up to
//! 120 plies and every no-mate row, and a stop reaches every rank.

mod common;

use common::{helpmate_sfen, rows_up_to};
use kyozume::search::{
    verify_helpmate, DiskBudget, Limits, LocalRank, Outcome, Ranks, SearchResult, Solver, Strategy,
    Transport,
};
use kyozume::shogi::Position;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

fn solve_alone(sfen: &str, limits: &Limits) -> SearchResult {
    let pos = Position::from_sfen(sfen).unwrap();
    let mut solver = Solver::new(64).unwrap();
    let stop = AtomicBool::new(false);
    kyozume::search::with_search_stack(|| solver.solve(&pos, limits, &stop, &mut |_| {})).unwrap()
}

/// Every rank's result, by rank, with `stop` raised for all of them (as a user's stop is); and
/// from rank 0's level log, the plies of the last level the pass made (0 for none), and the
/// positions of all its levels and the bytes the ranks sent one another.
fn solve_among(
    ranks: usize,
    sfen: &str,
    limits: &Limits,
    stop: &AtomicBool,
) -> (Vec<SearchResult>, u32, (usize, u64)) {
    let (results, last, figures) = try_among(ranks, sfen, limits, stop);
    let results = (results.into_iter())
        .map(|r| r.unwrap_or_else(|e| panic!("{sfen}: {e}")))
        .collect();
    (results, last, figures)
}

/// `solve_among`, each rank's error as it said it.
fn try_among(
    ranks: usize,
    sfen: &str,
    limits: &Limits,
    stop: &AtomicBool,
) -> (Vec<Result<SearchResult, String>>, u32, (usize, u64)) {
    let pos = Position::from_sfen(sfen).unwrap();
    let (log, levels) = crossbeam_channel::unbounded();
    let limits = &Limits {
        level_log: Some(log),
        ..limits.clone()
    };
    let results = std::thread::scope(|scope| {
        let handles: Vec<_> = LocalRank::group(ranks)
            .into_iter()
            .map(|rank| {
                let limits = Limits {
                    ranks: Some(Ranks(Arc::new(rank) as Arc<dyn Transport>)),
                    ..limits.clone()
                };
                let pos = &pos;
                std::thread::Builder::new()
                    .stack_size(kyozume::search::SEARCH_STACK_BYTES)
                    .spawn_scoped(scope, move || {
                        let mut solver = Solver::new(64).unwrap();
                        (solver.solve(pos, &limits, stop, &mut |_| {})).map_err(|e| e.to_string())
                    })
                    .unwrap()
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let levels: Vec<_> = levels.try_iter().collect();
    let last = levels.iter().map(|l| l.plies).max().unwrap_or(0);
    let positions = levels.iter().map(|l| l.positions).sum();
    let exchanged = levels.iter().map(|l| l.exchanged).max().unwrap_or(0);
    (results, last, (positions, exchanged))
}

#[test]
fn ranks_give_one_process_lengths_counts_and_lines() {
    let (rows, helpmate_rows) = rows_up_to(120);
    assert!(helpmate_rows >= 100, "{helpmate_rows} rows");
    let stop = AtomicBool::new(false);
    let mut by_the_pass = 0;
    for (i, (name, sfen)) in rows.iter().enumerate() {
        // Counting up to 5 on most rows, the first line only on every fourth.
        let limits = Limits {
            strategy: Strategy::BreadthFirst,
            solution_limit: if i % 4 == 3 { 1 } else { 5 },
            threads: 1,
            ..Default::default()
        };
        let alone = solve_alone(sfen, &limits);
        for ranks in [2, 3] {
            // Two ranks of two threads each, every level of two positions or more cut into
            // shares and numbered by ranges; three ranks of one thread, numbering by ranges
            // on every other row and by gathering on the others (the rows' levels are narrow).
            let limits = match ranks {
                2 => Limits {
                    threads: 2,
                    parallel_batch_positions: Some(2),
                    ranges_from: Some(0),
                    ..limits.clone()
                },
                _ => Limits {
                    ranges_from: (i % 2 == 1).then_some(0),
                    ..limits.clone()
                },
            };
            let (results, last_level, (positions, exchanged)) =
                solve_among(ranks, sfen, &limits, &stop);
            // Each new position's order (8 bytes) went to every other rank, at the least.
            assert!(
                exchanged >= (8 * (ranks - 1) * positions) as u64,
                "{name} at {ranks}: {exchanged} bytes for {positions} positions"
            );
            // (Where memory ran short, every rank deepened alone.)
            if let Outcome::Mate(line) = &alone.outcome {
                by_the_pass += usize::from(last_level + 1 == line.len() as u32);
            }
            for (rank, result) in results.iter().enumerate() {
                let at = format!("{name}, rank {rank} of {ranks}");
                assert_eq!(result.outcome, alone.outcome, "{at}");
                assert_eq!(result.solutions, alone.solutions, "{at}");
                if let Outcome::Mate(line) = &result.outcome {
                    verify_helpmate(&Position::from_sfen(sfen).unwrap(), line).unwrap();
                }
            }
        }
    }
    // The ranks' pass itself found nearly every mate (rows of one ply have no level to make).
    assert!(
        by_the_pass * 10 >= helpmate_rows * 2 * 9,
        "{by_the_pass} of {} solves",
        helpmate_rows * 2
    );
}

#[test]
fn a_stop_ends_every_rank() {
    let sfen = helpmate_sfen("fmrs_morishige_1965");
    let limits = Limits {
        strategy: Strategy::BreadthFirst,
        threads: 1,
        ..Default::default()
    };
    let stop = AtomicBool::new(true);
    for result in solve_among(3, &sfen, &limits, &stop).0 {
        assert!(
            matches!(result.outcome, Outcome::Unknown { .. }),
            "{:?}",
            result.outcome
        );
    }
}

#[test]
fn ranks_with_their_links_on_disk_answer_alike_and_a_disk_error_ends_all() {
    let dir = tempfile::tempdir().unwrap();
    let on_disk = |dir: &std::path::Path| DiskBudget {
        dir: Some(dir.to_path_buf()),
        cap_bytes: 1 << 30,
        always: true,
    };
    let stop = AtomicBool::new(false);
    let (rows, _) = rows_up_to(120);
    for (name, sfen) in rows.iter().step_by(3) {
        let limits = Limits {
            strategy: Strategy::BreadthFirst,
            solution_limit: 5,
            threads: 1,
            ..Default::default()
        };
        let alone = solve_alone(sfen, &limits);
        let in_memory = solve_among(2, sfen, &limits, &stop).0;
        let limits = Limits {
            disk: on_disk(dir.path()),
            ..limits
        };
        for (result, in_memory) in solve_among(2, sfen, &limits, &stop)
            .0
            .iter()
            .zip(&in_memory)
        {
            assert_eq!(result.outcome, alone.outcome, "{name}");
            assert_eq!(result.solutions, alone.solutions, "{name}");
            // The same moves as with the links in memory: no deepening after the pass (which
            // a line that could not be read back from the disk would have cost).
            assert_eq!(result.nodes, in_memory.nodes, "{name}");
        }
    }
    // Nothing left behind: the links' files are unnamed.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    // A directory that is not there: every rank ends with the disk error.
    let limits = Limits {
        strategy: Strategy::BreadthFirst,
        threads: 1,
        disk: on_disk(&dir.path().join("missing")),
        ..Default::default()
    };
    let sfen = helpmate_sfen("fmrs_morishige_1965");
    for result in try_among(3, &sfen, &limits, &stop).0 {
        let error = result.expect_err("no links, no answer");
        assert!(error.contains("missing"), "{error}");
    }
}
