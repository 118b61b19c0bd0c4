//! More threads never cost work: on bushy problems (a lone king and the attacker's hand, whose
//! trees the breadth-first pass does not suit) the nodes searched at 2 and 4 threads stay within
//! a small multiple of one thread's, at the defaults a GUI user gets (counting the solutions) and
//! with a small table. Nodes are compared, not times: they are stable where times are not. Before
//! the fix, helper threads made the main search's iterations look cheap, sent the 13-ply problem
//! into a breadth-first pass, and two threads searched 24 M nodes where one searched 3.8 M.

use kyozume::search::{verify_helpmate, Limits, Outcome, Solver, Tuning};
use kyozume::shogi::Position;
use std::sync::atomic::AtomicBool;

/// Bushy problems from `bench/suite.tsv`'s `bushy` group (lengths from there).
const BUSHY: [(&str, u32); 4] = [
    ("9/9/9/9/9/9/4k4/9/9 b S2N2P2r2b4g3s2n4l16p 1", 13),
    ("9/9/9/9/9/9/9/9/1k7 b S4P2r2b4g3s4n4l14p 1", 17),
    ("9/9/9/9/9/9/8k/9/9 b 3N3P2r2b4g4sn4l15p 1", 13),
    ("9/9/9/9/9/9/9/9/5k3 b S4NP2r2b4g3s4l17p 1", 13),
];

/// Nodes to solve `sfen` at `threads` with a fresh `hash_mb` table, the answer checked.
fn nodes(sfen: &str, plies: u32, hash_mb: usize, threads: usize, beyond_cores: bool) -> u64 {
    let pos = Position::from_sfen(sfen).unwrap();
    let limits = Limits {
        threads,
        solution_limit: 2,
        tuning: Tuning {
            helpers_beyond_cores: beyond_cores,
            ..Tuning::default()
        },
        ..Default::default()
    };
    let mut solver = Solver::new(hash_mb).unwrap();
    let r = solver
        .solve(&pos, &limits, &AtomicBool::new(false), &mut |_| {})
        .unwrap();
    match &r.outcome {
        Outcome::Mate(line) => {
            assert_eq!(line.len() as u32, plies, "{sfen}");
            verify_helpmate(&pos, line).unwrap();
        }
        other => panic!("{sfen}: {other:?}"),
    }
    r.nodes
}

#[test]
fn more_threads_search_about_as_many_nodes_as_one_on_bushy_problems() {
    kyozume::search::with_search_stack(|| {
        for (sfen, plies) in BUSHY {
            for hash_mb in [16, 256] {
                let one = nodes(sfen, plies, hash_mb, 1, false);
                for (threads, beyond_cores) in [(2, false), (4, false), (4, true)] {
                    // The fewer of two runs where the first is over: how the threads share a
                    // table varies with the scheduling, and four threads on a shared 2-vCPU
                    // host once searched 3.02x one thread's nodes (774,758 against 256,528,
                    // 2026-12-05, a CI run; six runs alone stayed under). The defect this
                    // guards against is not a spike but every run: 6.3x, above.
                    let mut many = nodes(sfen, plies, hash_mb, threads, beyond_cores);
                    if many > 3 * one {
                        many = many.min(nodes(sfen, plies, hash_mb, threads, beyond_cores));
                    }
                    assert!(
                        many <= 3 * one,
                        "{sfen} at {hash_mb} MB: {many} nodes at {threads} threads \
                         (helpers beyond the cores: {beyond_cores}), {one} at one"
                    );
                }
            }
        }
    });
}
