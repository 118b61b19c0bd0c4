//! A bound on the length (`Limits::max_plies`, `MaxPlies`, `--max-plies`, `--plies`): the engine
//! answers "the shortest solution within N" or "none within N" exactly as the reference model's
//! exhaustive solver (tests/fairy/mod.rs: square by square, nothing shared with the engine's
//! generator) does with the same bound, under every stipulation and condition, with its table
//! cold and warm from other bounds; and what a bounded search stores never answers a later
//! search with another bound, or none, wrongly.

mod common;
mod fairy;

use common::{helpmates, nomates};
use fairy::*;
use kyozume::search::{Limits, Outcome, Solver, Strategy};
use kyozume::shogi::stipulation::verify_solution;
use kyozume::shogi::{Goal, Position, Stipulation};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::sync::atomic::AtomicBool;

/// What a bounded search answers: the shortest length and count, or none within the bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answer {
    Mate(u32, u64),
    NoneWithin,
}

/// The engine's answer within `bound` plies (None: unbounded), lines replayed; a "none" must
/// name the bound (or be the stronger "none at any length").
fn engine(
    solver: &mut Solver,
    root: &Position,
    (stipulation, strategy, threads): (Stipulation, Strategy, usize),
    bound: Option<u32>,
) -> Answer {
    let limits = Limits {
        stipulation,
        strategy,
        threads,
        max_plies: bound,
        solution_limit: 1000,
        ..Default::default()
    };
    let r = solver
        .solve(root, &limits, &AtomicBool::new(false), &mut |_| {})
        .unwrap();
    let sfen = root.to_sfen();
    match r.outcome {
        Outcome::Mate(line) => {
            assert!(
                bound.is_none_or(|b| line.len() as u32 <= b),
                "{sfen} {stipulation}: {} plies past the bound {bound:?}",
                line.len()
            );
            let s = r.solutions.expect("counted");
            assert!(s.complete);
            for l in &s.lines {
                assert_eq!(l.len(), line.len());
                verify_solution(root, stipulation, l)
                    .unwrap_or_else(|e| panic!("{sfen} {stipulation}: {e}"));
            }
            Answer::Mate(line.len() as u32, s.count as u64)
        }
        Outcome::NoMateWithin { max_plies } => {
            assert_eq!(Some(max_plies), bound, "{sfen} {stipulation}");
            Answer::NoneWithin
        }
        Outcome::NoMate => Answer::NoneWithin,
        Outcome::Unknown { lower_bound } => {
            panic!("{sfen} {stipulation}: stopped at {lower_bound}")
        }
    }
}

/// What the reference's shortest solution within `searched` plies says of the bound `bound`
/// (None where it cannot tell: no solution within `searched`, and `bound` beyond it).
fn expected(reference: Option<(u32, u64)>, searched: u32, bound: u32) -> Option<Answer> {
    match reference {
        Some((len, n)) if len <= bound => Some(Answer::Mate(len, n.min(1000))),
        Some(_) => Some(Answer::NoneWithin),
        None if bound <= searched => Some(Answer::NoneWithin),
        None => None,
    }
}

fn rule_sets() -> Vec<Fairy> {
    let plain = Fairy {
        powers: Powers::Normal,
        drop_mate_ok: false,
        greedy: None,
    };
    let mut sets = vec![plain];
    for powers in [
        Powers::Annan,
        Powers::Anhoku,
        Powers::Taimen,
        Powers::Haimen,
    ] {
        sets.push(Fairy { powers, ..plain });
    }
    sets.push(Fairy {
        drop_mate_ok: true,
        ..plain
    });
    sets.push(Fairy {
        greedy: Some(true),
        ..plain
    });
    sets.push(Fairy {
        greedy: Some(false),
        ..plain
    });
    sets
}

#[test]
fn bounded_answers_agree_with_the_reference_cold_and_warm() {
    // 8 rule sets x 4 stipulations x 10 random problems of our own making = 320 positions,
    // at most 4 of each 10 without a solution within the plies the reference searches. Each
    // at bounds below, at and above its shortest length (both parities): on a fresh solver
    // (cold), on one solver that has just answered the same position under other bounds in a
    // random order (warm), then unbounded on that warm solver; and through the breadth-first
    // pass where it runs (no 受先).
    let stats = kyozume::search::with_search_stack(|| {
        let mut warm = Solver::new_lazy(32).unwrap();
        let mut positions = 0;
        let mut queries = 0;
        let mut kinds = [0usize; 3]; // solved, none within the bound, none within the reference's
        for (i, rules) in rule_sets().into_iter().enumerate() {
            let mut rng = ChaCha8Rng::seed_from_u64(6100 + i as u64);
            for (goal, defender_first) in [
                (Goal::Helpmate, false),
                (Goal::Selfmate, false),
                (Goal::Helpmate, true),
                (Goal::Selfmate, true),
            ] {
                let stipulation = Stipulation {
                    goal,
                    defender_first,
                    conditions: rules.conditions(),
                };
                // The reference's search: H# to 5 plies, the others to 4 (HS# 受先: 3).
                let searched = if stipulation.length_parity() == 1 && !defender_first {
                    5
                } else {
                    4
                };
                let (mut solved, mut unsolved) = (0, 0);
                while solved + unsolved < 10 {
                    let Some(root) = random_problem(&mut rng, stipulation) else {
                        continue;
                    };
                    if stipulation.check_position(&root).is_err() {
                        continue;
                    }
                    let sfen = root.to_sfen();
                    let reference = rules.shortest(&sfen, stipulation, searched);
                    match reference {
                        Some(_) => solved += 1,
                        None if unsolved < 4 => unsolved += 1,
                        None => continue,
                    }
                    positions += 1;
                    let mut bounds: Vec<u32> = match reference {
                        Some((len, _)) => [len.saturating_sub(2), len - 1, len, len + 1, len + 3]
                            .into_iter()
                            .filter(|&b| b >= 1)
                            .collect(),
                        None => vec![searched - 2, searched - 1, searched],
                    };
                    bounds.dedup();
                    bounds.shuffle(&mut rng);
                    for &bound in &bounds {
                        let want = expected(reference, searched, bound).expect("within reach");
                        let mut cold = Solver::new_lazy(4).unwrap();
                        let setting = (stipulation, Strategy::Auto, 1);
                        let got = engine(&mut cold, &root, setting, Some(bound));
                        assert_eq!(got, want, "{sfen} {stipulation} within {bound}, cold");
                        let got = engine(&mut warm, &root, setting, Some(bound));
                        assert_eq!(got, want, "{sfen} {stipulation} within {bound}, warm");
                        if !defender_first {
                            let threads = 1 + queries % 2;
                            let setting = (stipulation, Strategy::BreadthFirst, threads);
                            let got = engine(&mut warm, &root, setting, Some(bound));
                            assert_eq!(got, want, "{sfen} {stipulation} within {bound}, pass");
                        }
                        queries += 1;
                        kinds[match (want, reference) {
                            (Answer::Mate(..), _) => 0,
                            (Answer::NoneWithin, Some(_)) => 1,
                            (Answer::NoneWithin, None) => 2,
                        }] += 1;
                    }
                    // Unbounded, after the bounded answers: what they stored stays a bound.
                    if let Some((len, n)) = reference {
                        let setting = (stipulation, Strategy::Auto, 1);
                        let got = engine(&mut warm, &root, setting, None);
                        assert_eq!(got, Answer::Mate(len, n.min(1000)), "{sfen} {stipulation}");
                    }
                }
            }
        }
        (positions, queries, kinds)
    });
    let (positions, queries, kinds) = stats;
    eprintln!("{positions} positions, {queries} bounds: {kinds:?}");
    assert!(positions >= 300);
    // Every kind of answer is well represented.
    assert!(kinds.iter().all(|&k| k >= 100), "{kinds:?}");
}

#[test]
fn positions_without_any_solution_answer_none_within_every_bound() {
    kyozume::search::with_search_stack(|| {
        let mut warm = Solver::new_lazy(32).unwrap();
        for (name, sfen) in nomates() {
            let root = Position::from_sfen(&sfen).unwrap();
            for bound in [1, 2, 7, 9, 15] {
                let setting = (Stipulation::HELPMATE, Strategy::Auto, 1);
                let mut cold = Solver::new_lazy(4).unwrap();
                let limits = Limits {
                    max_plies: Some(bound),
                    ..Default::default()
                };
                let r = cold
                    .solve(&root, &limits, &AtomicBool::new(false), &mut |_| {})
                    .unwrap();
                // Cold, within a bound too short for the proof of "none at all": the bound.
                assert!(
                    matches!(r.outcome, Outcome::NoMateWithin { max_plies } if max_plies == bound)
                        || r.outcome == Outcome::NoMate,
                    "{name} within {bound}: {:?}",
                    r.outcome
                );
                assert_eq!(
                    engine(&mut warm, &root, setting, Some(bound)),
                    Answer::NoneWithin,
                    "{name} within {bound}"
                );
            }
            // Unbounded after the bounds: still "none at any length", proven.
            let r = warm
                .solve(
                    &root,
                    &Limits::default(),
                    &AtomicBool::new(false),
                    &mut |_| {},
                )
                .unwrap();
            assert_eq!(r.outcome, Outcome::NoMate, "{name}");
        }
    });
}

#[test]
fn published_problems_within_bounds_through_the_pass_and_deepening() {
    // Rows of 9 to 61 plies: just short of the length "none within", at it the published
    // length and the count an unbounded search gives, at 1 and 2 threads, the pass forced and
    // not, a solver warm from the other bounds and a cold one.
    let rows: Vec<_> = helpmates()
        .into_iter()
        .filter(|p| (9..=61).contains(&p.plies))
        .step_by(3)
        .collect();
    assert!(rows.len() >= 8, "{}", rows.len());
    kyozume::search::with_search_stack(|| {
        let mut warm = Solver::new_lazy(64).unwrap();
        for p in &rows {
            let root = Position::from_sfen(&p.sfen).unwrap();
            let unbounded = engine(
                &mut Solver::new_lazy(64).unwrap(),
                &root,
                (Stipulation::HELPMATE, Strategy::Auto, 1),
                None,
            );
            assert!(
                matches!(unbounded, Answer::Mate(len, _) if len == p.plies),
                "{}",
                p.name
            );
            for (i, strategy) in [Strategy::Auto, Strategy::BreadthFirst, Strategy::Deepening]
                .into_iter()
                .enumerate()
            {
                let threads = 1 + i % 2;
                let setting = (Stipulation::HELPMATE, strategy, threads);
                for bound in [p.plies - 2, p.plies - 1, p.plies, p.plies + 4] {
                    let want = if bound >= p.plies {
                        unbounded
                    } else {
                        Answer::NoneWithin
                    };
                    let got = engine(&mut warm, &root, setting, Some(bound));
                    assert_eq!(got, want, "{} {strategy:?} within {bound}, warm", p.name);
                    let mut cold = Solver::new_lazy(64).unwrap();
                    let got = engine(&mut cold, &root, setting, Some(bound));
                    assert_eq!(got, want, "{} {strategy:?} within {bound}, cold", p.name);
                }
            }
        }
    });
}
