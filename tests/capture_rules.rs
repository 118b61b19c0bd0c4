//! The capture rules (キルケ, アンチキルケ, PWC) and the paralysis rules (マドラシ, Kマドラシ) on
//! their worked examples (tests/data/capture_rules_examples.tsv): the attacker's checks, the
//! defender's replies and the shortest helpmates, at one and two threads.

use kyozume::search::{Limits, Outcome, Solver, Strategy};
use kyozume::shogi::capture_rule::aftermath;
use kyozume::shogi::conditions::{CaptureRule, Conditions};
use kyozume::shogi::stipulation::verify_solution;
use kyozume::shogi::{Move, MoveList, PieceType, Position, RuleSet, Stipulation};
use std::collections::BTreeSet;
use std::sync::atomic::AtomicBool;

const EXAMPLES: &str = include_str!("data/capture_rules_examples.tsv");

struct Example<'a> {
    id: &'a str,
    rules: RuleSet,
    sfen: &'a str,
    query: &'a str,
    expected: &'a str,
}

fn examples() -> Vec<Example<'static>> {
    EXAMPLES
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert!(f.len() >= 4, "{l}");
            let conditions = match f[1] {
                "-" => Conditions::NONE,
                names => {
                    let (c, rest) = Conditions::parse_prefix(names).expect(names);
                    assert_eq!(rest, "", "{names}");
                    c
                }
            };
            Example {
                id: f[0],
                rules: RuleSet::new(conditions),
                sfen: f[2],
                query: f[3],
                expected: f.get(4).copied().unwrap_or(""),
            }
        })
        .collect()
}

/// The piece's letter as the examples write it: upper case, `+` when promoted.
fn letter(kind: PieceType) -> String {
    let base = kind.sfen_char();
    if kind.is_promoted() {
        format!("+{base}")
    } else {
        base.to_string()
    }
}

/// `m` as the examples write it: USI, then the piece the capture puts back on the board.
fn written(pos: &Position, m: Move, rules: RuleSet) -> String {
    let mut text = m.to_string();
    if rules.conditions().capture_rule == CaptureRule::Normal
        || m.is_drop()
        || pos.piece_at(m.to()).is_none()
    {
        return text;
    }
    let after = aftermath(pos, rules.capture_setting(), m);
    if let Some((square, piece)) = after.victim_to {
        text.push_str(&format!("/{square}{}", letter(piece.kind())));
    } else if after.capturer_to != m.to() {
        let kind = pos.piece_at(m.from()).unwrap().kind();
        let kind = if m.is_promotion() {
            kind.promoted()
        } else {
            kind
        };
        text.push_str(&format!("/{}{}", after.capturer_to, letter(kind)));
    }
    text
}

fn position(e: &Example) -> Position {
    Position::from_sfen_under(e.sfen, e.rules)
        .unwrap_or_else(|err| panic!("{}: {} does not parse: {err}", e.id, e.sfen))
}

fn written_list(pos: &Position, list: &MoveList, rules: RuleSet) -> BTreeSet<String> {
    let texts: Vec<String> = list.iter().map(|&m| written(pos, m, rules)).collect();
    let set: BTreeSet<String> = texts.iter().cloned().collect();
    assert_eq!(set.len(), texts.len(), "two moves written alike: {texts:?}");
    set
}

fn expected_set(text: &str) -> BTreeSet<String> {
    text.split_whitespace().map(String::from).collect()
}

#[test]
fn checks_and_replies_are_the_examples() {
    let mut tried = 0;
    for e in examples() {
        let pos = position(&e);
        let mut checks = MoveList::new();
        e.rules.checks(&pos, &mut checks);
        let words: Vec<&str> = e.query.split_whitespace().collect();
        match words[..] {
            ["checks"] => {
                assert_eq!(
                    written_list(&pos, &checks, e.rules),
                    expected_set(e.expected),
                    "{}: checks",
                    e.id
                );
            }
            ["replies", check] => {
                let m = *checks
                    .iter()
                    .find(|&&m| written(&pos, m, e.rules) == check)
                    .unwrap_or_else(|| panic!("{}: {check} is not a check here", e.id));
                let mut after = pos.clone();
                after.do_move(m);
                let mut replies = MoveList::new();
                e.rules.legal(&after, &mut replies);
                assert_eq!(
                    written_list(&after, &replies, e.rules),
                    expected_set(e.expected),
                    "{}: replies to {check}",
                    e.id
                );
                // Mated exactly when there is no reply.
                assert_eq!(e.rules.is_checkmate(&after), replies.is_empty(), "{}", e.id);
                after.undo_move(m);
                assert_eq!(after, pos, "{}: undo", e.id);
                assert_eq!(after.key(), after.compute_key(), "{}", e.id);
            }
            _ => continue,
        }
        tried += 1;
    }
    assert!(tried >= 55, "only {tried} move-list examples");
}

/// Every line of `line`'s moves written as the examples write them.
fn written_line(root: &Position, line: &[Move], rules: RuleSet) -> String {
    let mut pos = root.clone();
    let mut words = Vec::new();
    for &m in line {
        words.push(written(&pos, m, rules));
        pos.do_move(m);
    }
    words.join(" ")
}

fn solve_examples(threads: usize) {
    let mut solver = Solver::new(64).unwrap();
    let mut tried = 0;
    for e in examples() {
        let Some(max) = e.query.strip_prefix("hmate ") else {
            continue;
        };
        let max: u32 = max.parse().unwrap();
        let pos = position(&e);
        let stipulation = Stipulation::HELPMATE.under(e.rules.conditions());
        let limits = Limits {
            stipulation,
            strategy: Strategy::Auto,
            max_plies: Some(max),
            solution_limit: 1000,
            threads,
            ..Default::default()
        };
        let result = solver
            .solve(&pos, &limits, &AtomicBool::new(false), &mut |_| {})
            .unwrap();
        let (summary, lines) = e.expected.split_once('|').unwrap_or((e.expected, ""));
        match result.outcome {
            Outcome::Mate(line) => {
                let s = result.solutions.expect("counted");
                assert!(s.complete, "{}", e.id);
                assert_eq!(
                    summary,
                    format!("{} {}", line.len(), s.count),
                    "{}: length and count",
                    e.id
                );
                let mut found = BTreeSet::new();
                for l in &s.lines {
                    verify_solution(&pos, stipulation, l).unwrap_or_else(|err| {
                        panic!(
                            "{}: {} does not verify: {err}",
                            e.id,
                            written_line(&pos, l, e.rules)
                        )
                    });
                    found.insert(written_line(&pos, l, e.rules));
                }
                if !lines.is_empty() {
                    let expected: BTreeSet<String> =
                        lines.split(" ; ").map(|l| l.trim().to_string()).collect();
                    assert_eq!(found, expected, "{}: lines", e.id);
                }
            }
            Outcome::NoMate | Outcome::NoMateWithin { .. } => {
                assert_eq!(summary, "none", "{}: found no helpmate", e.id)
            }
            Outcome::Unknown { lower_bound } => panic!("{}: stopped at {lower_bound}", e.id),
        }
        tried += 1;
    }
    assert!(tried >= 25, "only {tried} helpmate examples");
}

#[test]
fn helpmates_are_the_examples_at_one_thread() {
    solve_examples(1);
}

#[test]
fn helpmates_are_the_examples_at_two_threads() {
    solve_examples(2);
}
