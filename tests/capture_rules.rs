//! The capture rules (キルケ, アンチキルケ, PWC) and the paralysis rules (マドラシ, Kマドラシ) on
//! their worked examples (tests/data/capture_rules_examples.tsv): the attacker's checks, the
//! defender's replies and the shortest helpmates, at one and two threads.

mod common;
mod fairy;

use fairy::capture::{written, Capture, Para, Rules2};
use kyozume::search::{Limits, Outcome, Solver, Strategy};
use kyozume::shogi::conditions::{CaptureRule, Conditions};
use kyozume::shogi::japanese::{line_to_japanese_after, parse_japanese_line_under};
use kyozume::shogi::stipulation::verify_solution;
use kyozume::shogi::{Move, MoveList, Position, RuleSet, Stipulation};
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

/// The reference's rules for a `RuleSet` of the examples.
fn reference(rules: RuleSet) -> Rules2 {
    let c = rules.conditions();
    Rules2 {
        capture: match c.capture_rule {
            CaptureRule::Normal => Capture::Normal,
            CaptureRule::Circe => Capture::Circe,
            CaptureRule::AntiCirce => Capture::AntiCirce,
            CaptureRule::Pwc => Capture::Pwc,
        },
        paralysis: match c.paralysis {
            kyozume::shogi::conditions::Paralysis::None => Para::None,
            kyozume::shogi::conditions::Paralysis::Madrasi => Para::Madrasi,
            kyozume::shogi::conditions::Paralysis::KMadrasi => Para::KMadrasi,
        },
        drop_mate_ok: c.pawn_drop_mate == kyozume::shogi::conditions::PawnDropMate::Allowed,
        ..Rules2::PLAIN
    }
}

/// Every example with a helpmate, solved: the example, its position, its stipulation and
/// every shortest line.
fn solved_examples() -> Vec<(Example<'static>, Position, Stipulation, Vec<Vec<Move>>)> {
    let mut solver = Solver::new(16).unwrap();
    let mut solved = Vec::new();
    for e in examples() {
        if !e.query.starts_with("hmate") || e.expected == "none" {
            continue;
        }
        let pos = position(&e);
        let stipulation = Stipulation::HELPMATE.under(e.rules.conditions());
        let limits = Limits {
            stipulation,
            solution_limit: 100,
            ..Default::default()
        };
        let result = solver
            .solve(&pos, &limits, &AtomicBool::new(false), &mut |_| {})
            .unwrap();
        let lines = result.solutions.unwrap().lines;
        solved.push((e, pos, stipulation, lines));
    }
    solved
}

#[test]
fn japanese_lines_with_their_suffixes_read_back_to_the_same_moves() {
    let mut suffixes = 0;
    for (e, pos, _, lines) in solved_examples() {
        for line in lines {
            let text = line_to_japanese_after(&pos, &line, None, e.rules);
            suffixes += text.matches('/').count();
            let back = parse_japanese_line_under(&pos, &text, e.rules)
                .unwrap_or_else(|err| panic!("{}: {text}: {err}", e.id));
            assert_eq!(back, line, "{}: {text}", e.id);
        }
    }
    assert!(suffixes >= 10, "only {suffixes} suffixes written");
    // The suffix as the rules write it: a silver reborn on 3a, a returning king, a placed 成銀.
    let write = |sfen: &str, names: &str, usi: &str| {
        let rules = RuleSet::new(Conditions::parse_prefix(names).unwrap().0);
        let pos = Position::from_sfen_under(sfen, rules).unwrap();
        let m = pos.parse_move_under(usi, rules).unwrap();
        line_to_japanese_after(&pos, &[m], None, rules)
    };
    assert_eq!(
        write("4k4/4+s4/4G4/9/9/9/9/9/9 b - 1", "キルケ", "5c5b/3a"),
        "▲５二金/３一銀"
    );
    assert_eq!(
        write("9/9/6p2/6S2/9/9/9/6k2/9 b - 1", "アンチキルケ", "3d3c+"),
        "▲３三銀成/３九成銀"
    );
    assert_eq!(
        write("4k4/9/4+s4/9/9/9/9/4R4/9 b - 1", "PWC", "5h5c+"),
        "▲５三飛成/５八成銀"
    );
}

#[test]
fn usi_options_set_the_rules_between_problems() {
    let ct6 = "6R2/9/9/9/9/8B/5g3/5k3/9 b G 1";
    let mt5 = "4k4/9/4KG3/9/9/9/9/9/9 b - 1";
    // Each step's commands, the position searched (SFEN and moves played) and under which
    // rules, and whether a command of the step is refused.
    type Step<'a> = (Vec<&'a str>, &'a str, &'a [&'a str], &'a str, bool);
    let steps: Vec<Step> = vec![
        (
            vec!["setoption name CaptureRule value Circe"],
            ct6,
            &[],
            "キルケ",
            false,
        ),
        (
            vec!["setoption name CaptureRule value Circle"],
            ct6,
            &["G*5h", "4g5h/6i"],
            "キルケ",
            true,
        ),
        (
            vec![
                "setoption name CaptureRule value Normal",
                "setoption name Paralysis value Madrasi",
            ],
            mt5,
            &[],
            "マドラシ",
            false,
        ),
        (
            vec!["setoption name Paralysis value KMadrasi"],
            mt5,
            &[],
            "Kマドラシ",
            false,
        ),
        (
            vec!["setoption name Paralysis value None"],
            ct6,
            &[],
            "",
            false,
        ),
    ];
    let mut script = String::from("usi\nisready\nsetoption name SolutionLimit value 20\n");
    for (commands, sfen, moves, ..) in &steps {
        for c in commands {
            script.push_str(c);
            script.push('\n');
        }
        if moves.is_empty() {
            script.push_str(&format!("position sfen {sfen}\n"));
        } else {
            script.push_str(&format!("position sfen {sfen} moves {}\n", moves.join(" ")));
        }
        script.push_str("go mate 20000\n");
    }
    let (lines, status, _) = common::run_script(&script, std::time::Duration::from_secs(120));
    assert!(status.success());
    for option in [
        "option name CaptureRule type combo default Normal var Normal var Circe var AntiCirce var PWC",
        "option name Paralysis type combo default None var None var Madrasi var KMadrasi",
    ] {
        assert!(lines.iter().any(|l| l == option), "{option}: {lines:#?}");
    }
    let mut searches: Vec<Vec<&String>> = Vec::new();
    let mut errors_before = Vec::new();
    let mut errors = 0;
    for l in &lines {
        if l.starts_with("info string error") {
            errors += 1;
        } else if l.starts_with("info string stipulation") {
            searches.push(vec![l]);
            errors_before.push(errors);
            errors = 0;
        } else if let Some(search) = searches.last_mut() {
            search.push(l);
        }
    }
    assert_eq!(searches.len(), steps.len(), "{lines:#?}");
    for ((_, sfen, moves, names, refused), (search, errors)) in
        steps.iter().zip(searches.iter().zip(&errors_before))
    {
        assert_eq!(*errors, usize::from(*refused), "{names} {sfen}: {lines:#?}");
        let rules = RuleSet::new(Conditions::parse_prefix(names).unwrap().0);
        let mut root = Position::from_sfen_under(sfen, rules).unwrap();
        for m in moves.iter() {
            let m = root.parse_move_under(m, rules).unwrap();
            root.do_move(m);
        }
        let root = Position::from_sfen_under(&root.to_sfen(), rules).unwrap();
        let stipulation = Stipulation::HELPMATE.under(rules.conditions());
        let (len, count) = reference(rules)
            .shortest(&root.to_sfen(), stipulation, 5)
            .expect("each has a mate");
        let answer = search.last().unwrap();
        let words: Vec<&str> = answer
            .strip_prefix("checkmate ")
            .unwrap()
            .split(' ')
            .collect();
        assert_eq!(words.len() as u32, len, "{names} {sfen}: {answer}");
        let alternatives = search
            .iter()
            .filter(|l| l.starts_with("info string alt"))
            .count();
        assert_eq!(
            alternatives as u64 + 1,
            count,
            "{names} {sfen}: {search:#?}"
        );
    }
}

#[test]
fn the_command_line_reports_rebirths_and_counts_every_choice() {
    let kyozume = env!("CARGO_BIN_EXE_kyozume");
    let ct6 = "6R2/9/9/9/9/8B/5g3/5k3/9 b G 1";
    let out = std::process::Command::new(kyozume)
        .args([
            "solve",
            "--json",
            "--solutions",
            "20",
            "--rules",
            "キルケばか詰",
            ct6,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    assert_eq!(json["stipulation"], "H# (Circe)");
    assert_eq!(json["plies"], 3);
    assert_eq!(json["solutions"], 6);
    let mut lines = vec![(json["moves"].clone(), json["rebirths"].clone())];
    let alternatives = json["alternatives"].as_array().unwrap();
    let rebirths = json["alternative_rebirths"].as_array().unwrap();
    assert_eq!(alternatives.len(), rebirths.len());
    lines.extend(alternatives.iter().cloned().zip(rebirths.iter().cloned()));
    let texts: BTreeSet<String> = lines
        .iter()
        .map(|(moves, rebirths)| {
            let moves = moves.as_array().unwrap();
            let rebirths = rebirths.as_array().unwrap();
            assert_eq!(moves.len(), rebirths.len());
            moves
                .iter()
                .zip(rebirths)
                .map(|(m, r)| match r.as_str() {
                    Some(home) => format!("{}/{home}", m.as_str().unwrap()),
                    None => m.as_str().unwrap().to_string(),
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    // The two lines that differ only in the last capture's choice, told apart by `rebirths`
    // (the gold's capture on 5h has both homes empty, one of them illegal: its entry is given).
    assert!(texts.contains("G*5h 4g5h/6i 6i5h/4a"), "{texts:?}");
    assert!(texts.contains("G*5h 4g5h/6i 6i5h/6a"), "{texts:?}");
    assert_eq!(texts.len(), 6, "{texts:?}");
    // H-C3: both solutions are the capture 5c5b, its silver reborn on 3a or 7a.
    let out = std::process::Command::new(kyozume)
        .args([
            "solve",
            "--json",
            "--rules",
            "キルケ",
            "4k4/4s4/4G4/9/4L4/9/9/9/9 b - 1",
        ])
        .output()
        .unwrap();
    let json: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    let japanese = json["japanese"].as_str().unwrap();
    assert!(
        japanese == "▲５二金/３一銀" || japanese == "▲５二金/７一銀",
        "{japanese}"
    );
    assert_eq!(json["solutions"], 2);
    // KIF carries the suffix after the origin.
    let out = std::process::Command::new(kyozume)
        .args([
            "solve",
            "--output",
            "kif",
            "--rules",
            "キルケ",
            "4k4/4s4/4G4/9/4L4/9/9/9/9 b - 1",
        ])
        .output()
        .unwrap();
    let kif = String::from_utf8_lossy(&out.stdout);
    assert!(kif.contains("作品形式：キルケ協力詰"), "{kif}");
    assert!(kif.contains("５二金(53)/"), "{kif}");
    // perft counts each choice: C-T1's checks are 4 moves with the two file-5 choices.
    let out = std::process::Command::new(kyozume)
        .args([
            "perft",
            "1",
            "--rules",
            "キルケ",
            "--sfen",
            "4k4/4+s4/4G4/9/9/9/9/9/9 b - 1",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let plain = std::process::Command::new(kyozume)
        .args(["perft", "1", "--sfen", "4k4/4+s4/4G4/9/9/9/9/9/9 b - 1"])
        .output()
        .unwrap();
    let plain = String::from_utf8_lossy(&plain.stdout);
    let count = |t: &str| -> u64 {
        t.split_whitespace()
            .find_map(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("no count in {t}"))
    };
    assert_eq!(count(&text), count(&plain) + 1, "{text} / {plain}");
    // Two capture rules are refused with both names.
    let out = std::process::Command::new(kyozume)
        .args(["solve", "--rules", "キルケPWCばか詰", ct6])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("キルケ") && err.contains("PWC"), "{err}");
}

#[test]
fn lengths_agree_with_fairy_mate() {
    let data = include_str!("data/fairy_mate_capture_rules.tsv");
    let mut solver = Solver::new(64).unwrap();
    let mut rows = 0;
    for line in data
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let f: Vec<&str> = line.split('\t').collect();
        let stipulation =
            Stipulation::parse_rules(f[0]).unwrap_or_else(|e| panic!("{}: {e}", f[0]));
        let fairy_mate: usize = f[3].parse().unwrap();
        let root = Position::from_sfen_under(f[2], stipulation.rules()).unwrap();
        let limits = Limits {
            stipulation,
            threads: 2,
            ..Default::default()
        };
        let result = solver
            .solve(&root, &limits, &AtomicBool::new(false), &mut |_| {})
            .unwrap();
        let Outcome::Mate(line) = result.outcome else {
            panic!("{} {}: no mate", f[0], f[1]);
        };
        assert_eq!(line.len(), fairy_mate, "{} {}", f[0], f[1]);
        verify_solution(&root, stipulation, &line).unwrap();
        rows += 1;
    }
    assert!(rows >= 40, "{rows} rows");
}

#[test]
fn kif_and_ki2_records_read_back_with_their_choices() {
    use kyozume::shogi::record::{read_ki2, read_kif, to_ki2, to_kif};
    let mut records = 0;
    for (e, pos, stipulation, lines) in solved_examples() {
        for line in lines {
            let kif = to_kif(&pos, stipulation, &line, "2026/12/02");
            let (root, moves) =
                read_kif(&kif).unwrap_or_else(|err| panic!("{}: {err}\n{kif}", e.id));
            assert_eq!(root.to_sfen(), pos.to_sfen(), "{}", e.id);
            assert_eq!(moves, line, "{}: {kif}", e.id);
            let ki2 = to_ki2(&pos, stipulation, &line, "2026/12/02");
            let (_, moves) = read_ki2(&ki2).unwrap_or_else(|err| panic!("{}: {err}\n{ki2}", e.id));
            assert_eq!(moves, line, "{}: {ki2}", e.id);
            records += 1;
        }
    }
    assert!(records >= 40, "{records} records");
}
