//! Both search strategies give the published shortest lengths: iterative deepening alone, and
//! the default (deepening, then breadth-first), including the fallback to deepening when the
//! breadth-first pass runs out of its memory budget.

mod common;

use common::{helpmates, nomates};
use kyozume::search::{verify_helpmate, Limits, Outcome, Solver, Strategy};
use kyozume::shogi::Position;
use std::sync::atomic::AtomicBool;

fn solve(solver: &mut Solver, sfen: &str, strategy: Strategy) -> Outcome {
    let pos = Position::from_sfen(sfen).unwrap();
    let limits = Limits {
        strategy,
        ..Default::default()
    };
    let stop = AtomicBool::new(false);
    let result = solver.solve(&pos, &limits, &stop, &mut |_| {}).unwrap();
    if let Outcome::Mate(line) = &result.outcome {
        verify_helpmate(&pos, line).unwrap_or_else(|e| panic!("{sfen}: {e}"));
    }
    result.outcome
}

fn check_lengths(strategy: Strategy, hash_mb: usize, max_plies: u32) {
    let mut solver = Solver::new(hash_mb).unwrap();
    let mut checked = 0;
    for p in helpmates().iter().filter(|p| p.plies <= max_plies) {
        match solve(&mut solver, &p.sfen, strategy) {
            Outcome::Mate(line) => assert_eq!(line.len() as u32, p.plies, "{}", p.name),
            other => panic!("{}: {other:?}", p.name),
        }
        checked += 1;
    }
    assert!(checked >= 50);
    for (name, sfen) in nomates() {
        assert_eq!(
            solve(&mut solver, &sfen, strategy),
            Outcome::NoMate,
            "{name}"
        );
    }
}

#[test]
fn deepening_alone_finds_the_published_lengths() {
    kyozume::search::with_search_stack(|| check_lengths(Strategy::Deepening, 64, 60));
}

#[test]
fn breadth_first_out_of_memory_falls_back_to_deepening() {
    // A 1 MB budget is exhausted by the breadth-first pass of every non-trivial problem.
    kyozume::search::with_search_stack(|| check_lengths(Strategy::Auto, 1, 60));
}
