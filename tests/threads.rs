//! Threads change nothing but speed: every problem up to 120 plies and every no-mate position
//! gives the same length, the same solution count and the same counted lines at 1, 2 and 4
//! threads, with every breadth-first level sent through the narrow loop or (narrow loop off)
//! through the per-level threaded expansion in small slices, and helper threads sharing every
//! deepening iteration; the breadth-first pass gives the same
//! line too (in deepening, a helper may find another line of the same length first). One
//! problem solved 20 times at 4 threads gives the same answer each time.

mod common;

use common::{helpmates, nomates};
use kyozume::search::{
    verify_helpmate, Limits, Outcome, PassTuning, SearchResult, Solver, Strategy, Tuning,
};
use kyozume::shogi::Position;
use std::sync::atomic::AtomicBool;

/// Every level through the threaded code, cut into slices of `slice` positions so that slices
/// meet keys found by earlier ones, and each slice into batches of two positions so that the
/// threads' batches interleave and the owners must take them back in order. Levels narrower
/// than `narrow_below` run in the narrow loop (0: none; `None`: the default).
fn solve(
    solver: &mut Solver,
    sfen: &str,
    (threads, narrow_below): (usize, Option<usize>),
    strategy: Strategy,
    slice: usize,
) -> SearchResult {
    let pos = Position::from_sfen(sfen).unwrap();
    let limits = Limits {
        strategy,
        threads,
        tuning: Tuning {
            helpers_from_nodes: 0,
            helpers_beyond_cores: true,
            pass: PassTuning {
                parallel_slice_positions: slice,
                parallel_batch_positions: Some(2),
                narrow_below: narrow_below.unwrap_or(PassTuning::default().narrow_below),
                ..PassTuning::threads_on_every_level()
            },
        },
        solution_limit: 3,
        ..Default::default()
    };
    let stop = AtomicBool::new(false);
    let result = solver.solve(&pos, &limits, &stop, &mut |_| {}).unwrap();
    if let Outcome::Mate(line) = &result.outcome {
        verify_helpmate(&pos, line).unwrap_or_else(|e| panic!("{sfen}: {e}"));
    }
    result
}

/// The solutions counted, with their lines.
type Counted = Option<(usize, Vec<Vec<kyozume::shogi::Move>>)>;

/// What must not depend on the thread count: the outcome (its line when `with_line`, else its
/// length) and the counted solutions with their lines (met in generation order, whichever
/// thread found the mate).
fn answer(r: &SearchResult, with_line: bool) -> (Outcome, Counted) {
    let outcome = match &r.outcome {
        Outcome::Mate(line) if !with_line => Outcome::Unknown {
            lower_bound: line.len() as u32,
        },
        other => other.clone(),
    };
    let solutions = r.solutions.as_ref().map(|s| (s.count, s.lines.clone()));
    (outcome, solutions)
}

fn check_all(strategy: Strategy, narrow_below: Option<usize>) {
    // A small table: problems that outgrow it in breadth-first fall back to deepening, as in
    // the engine.
    let mut solvers: Vec<(usize, Solver)> = [1, 2, 4]
        .into_iter()
        .map(|t| (t, Solver::new(32).unwrap()))
        .collect();
    let mut checked = 0;
    let rows = helpmates()
        .into_iter()
        .filter(|p| p.plies <= 120)
        .map(|p| (p.name, p.sfen, Some(p.plies)))
        .chain(nomates().into_iter().map(|(n, s)| (n, s, None)));
    for (name, sfen, plies) in rows {
        let answers: Vec<_> = solvers
            .iter_mut()
            .map(|(t, solver)| {
                solver.clear();
                let with_line = strategy == Strategy::BreadthFirst;
                answer(
                    &solve(solver, &sfen, (*t, narrow_below), strategy, 7),
                    with_line,
                )
            })
            .collect();
        match (&answers[0].0, plies) {
            (Outcome::Mate(line), Some(plies)) => assert_eq!(line.len() as u32, plies, "{name}"),
            (Outcome::Unknown { lower_bound }, Some(plies)) => {
                assert_eq!(*lower_bound, plies, "{name}")
            }
            (Outcome::NoMate, None) => {}
            (other, _) => panic!("{name}: {other:?}"),
        }
        assert_eq!(answers[1], answers[0], "{name}: 2 threads against 1");
        assert_eq!(answers[2], answers[0], "{name}: 4 threads against 1");
        checked += 1;
    }
    assert!(checked >= 120, "{checked}");
}

#[test]
fn breadth_first_gives_the_same_answers_at_1_2_and_4_threads() {
    kyozume::search::with_search_stack(|| check_all(Strategy::BreadthFirst, None));
}

/// The same with the narrow loop off: every level through the per-level threaded expansion.
#[test]
fn breadth_first_level_by_level_gives_the_same_answers_at_1_2_and_4_threads() {
    kyozume::search::with_search_stack(|| check_all(Strategy::BreadthFirst, Some(0)));
}

#[test]
fn the_default_strategy_gives_the_same_answers_at_1_2_and_4_threads() {
    kyozume::search::with_search_stack(|| check_all(Strategy::Auto, None));
}

#[test]
fn deepening_gives_the_same_answers_at_1_2_and_4_threads() {
    kyozume::search::with_search_stack(|| check_all(Strategy::Deepening, None));
}

#[test]
fn twenty_runs_at_4_threads_agree() {
    let p = helpmates()
        .into_iter()
        .find(|p| p.name == "fmrs_test_solve_16")
        .unwrap();
    kyozume::search::with_search_stack(|| {
        let mut first = None;
        for _ in 0..20 {
            let mut solver = Solver::new(32).unwrap();
            let a = answer(
                &solve(&mut solver, &p.sfen, (4, None), Strategy::BreadthFirst, 64),
                true,
            );
            match &first {
                None => first = Some(a),
                Some(f) => assert_eq!(&a, f),
            }
        }
        let (outcome, _) = first.unwrap();
        assert!(matches!(outcome, Outcome::Mate(l) if l.len() as u32 == p.plies));
    });
}

/// With a breadth-first budget so small that the threaded insertion keeps running out of
/// memory and resuming, the counts must still be the published ones: an owner that had
/// finished its slice must not insert it again (it once did, and every edge counted twice).
#[test]
fn counts_survive_the_insertion_running_out_of_memory() {
    // 16 MB: the pass starts in a 2 MB reserve, less than its first caches, and must ask for
    // the table's memory at once.
    let mut solver = Solver::new(16).unwrap();
    let mut checked = 0;
    for p in helpmates()
        .into_iter()
        .filter(|p| !p.solutions.is_empty() && p.plies <= 60)
    {
        let r = solve(&mut solver, &p.sfen, (2, None), Strategy::BreadthFirst, 7);
        let count = r.solutions.as_ref().map_or(0, |s| s.count);
        match p.solutions.as_str() {
            "1" => assert_eq!(count, 1, "{}", p.name),
            "2" => assert_eq!(count, 2, "{}", p.name),
            _ => assert!(count >= 2, "{}: {count}", p.name),
        }
        checked += 1;
    }
    assert!(checked >= 40, "{checked}");
}

/// Counting after deepening runs on all the threads, split by the lines' first two plies: with
/// every cap from 1 to one past the count, the lines kept (and so the count) are the ones one
/// thread keeps, and each is a distinct mate of the shortest length.
#[test]
fn counting_on_threads_keeps_the_lines_one_thread_keeps_at_every_cap() {
    let mut rows: Vec<(String, String)> = helpmates()
        .into_iter()
        .filter(|p| p.plies <= 20 && p.solutions != "1")
        .map(|p| (p.name, p.sfen))
        .collect();
    assert!(rows.len() >= 4, "{rows:?}");
    // A lone king in the corner and six pieces in hand: many mates in 3, so that small caps
    // cut the count.
    rows.push(("corner".into(), "8k/9/9/9/9/9/9/9/9 b RB2G2S 1".into()));
    kyozume::search::with_search_stack(|| {
        let mut solver = Solver::new(32).unwrap();
        for (name, sfen) in &rows {
            let pos = Position::from_sfen(sfen).unwrap();
            let count_with = |solver: &mut Solver, threads: usize, cap: usize| {
                solver.clear();
                let limits = Limits {
                    strategy: Strategy::Deepening,
                    threads,
                    solution_limit: cap,
                    ..Default::default()
                };
                let r = solver
                    .solve(&pos, &limits, &AtomicBool::new(false), &mut |_| {})
                    .unwrap();
                let s = r.solutions.expect("counted");
                assert!(s.complete, "{name}");
                (r.outcome, s.count, s.lines)
            };
            let all = count_with(&mut solver, 1, 1000);
            if name == "corner" {
                assert!(all.1 >= 5, "{name}: {}", all.1);
            }
            for cap in 2..=all.1 + 1 {
                let one = count_with(&mut solver, 1, cap);
                assert_eq!(one.1, cap.min(all.1), "{name} cap {cap}");
                for threads in [2, 4] {
                    let many = count_with(&mut solver, threads, cap);
                    assert_eq!(many.1, one.1, "{name} cap {cap} at {threads} threads");
                    assert_eq!(many.2, one.2, "{name} cap {cap} at {threads} threads");
                }
                let len = one.2[0].len();
                for (i, line) in one.2.iter().enumerate() {
                    assert_eq!(line.len(), len, "{name}");
                    verify_helpmate(&pos, line).unwrap_or_else(|e| panic!("{name}: {e}"));
                    assert!(!one.2[..i].contains(line), "{name}: a line twice");
                }
            }
        }
    });
}

/// A stop during the threaded count leaves only facts in the table (a task cut short stores
/// nothing): counted again from the same table, the count is whole and the same.
#[test]
fn a_stop_during_the_threaded_count_leaves_the_table_sound() {
    // 5 plies, found in some 50 ms; its count takes 26 M nodes (about a second here).
    let p = helpmates()
        .into_iter()
        .find(|p| p.name == "fmrs_ofm-139_5")
        .unwrap();
    let pos = Position::from_sfen(&p.sfen).unwrap();
    let limits = Limits {
        threads: 4,
        solution_limit: 2,
        ..Default::default()
    };
    kyozume::search::with_search_stack(|| {
        let mut solver = Solver::new(64).unwrap();
        let stop = AtomicBool::new(false);
        let first = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(std::time::Duration::from_millis(150));
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
            });
            solver.solve(&pos, &limits, &stop, &mut |_| {}).unwrap()
        });
        let cut_short = first.solutions.as_ref().is_some_and(|s| !s.complete);
        eprintln!("the stop landed in the count: {cut_short}");
        let again = solver
            .solve(&pos, &limits, &AtomicBool::new(false), &mut |_| {})
            .unwrap();
        assert!(matches!(&again.outcome, Outcome::Mate(l) if l.len() as u32 == p.plies));
        let s = again.solutions.expect("counted");
        assert!(s.complete);
        assert_eq!(s.count.to_string(), p.solutions);
    });
}
