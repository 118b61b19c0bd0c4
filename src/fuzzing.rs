//! What each fuzz target (`fuzz/`) does with its input, here so that the targets and the
//! regression tests (`tests/fuzz_regressions.rs`) run the same code: every reader a user or a
//! file feeds, given any bytes, answers a value or an error — never a panic or a hang — and
//! what it reads, it writes back in a form that reads the same.

use crate::problem::{self, Format, PositionLine};
use crate::shogi::conditions::Conditions;
use crate::shogi::kif::{parse_bod_under, to_bod};
use crate::shogi::perft::perft_rules;
use crate::shogi::{record, Position, RuleSet, Stipulation};
use crate::usi::command::Command;

/// A fuzz target: it takes the fuzzer's bytes.
pub type Target = fn(&[u8]);

/// The targets, by name.
pub const TARGETS: [(&str, Target); 12] = [
    ("sfen", sfen),
    ("position_line", position_line),
    ("bod", bod),
    ("kif", |data| drop(record::read_kif(&text(data)))),
    ("ki2", |data| drop(record::read_ki2(&text(data)))),
    ("csa", |data| drop(record::read_csa(&text(data)))),
    ("usi_command", usi_command),
    ("usi_session", usi_session),
    ("rules", rules),
    ("batch", |data| {
        drop(crate::workbench::batch::read(&text(data), Format::Auto))
    }),
    ("checkpoint", |data| {
        drop(crate::search::read_checkpoint_unchecked(data))
    }),
    ("serve_request", crate::serve::read_requests),
];

/// Runs the target named `name` on `data` (false: no such target).
pub fn run(name: &str, data: &[u8]) -> bool {
    match TARGETS.iter().find(|(n, _)| *n == name) {
        Some((_, target)) => {
            target(data);
            true
        }
        None => false,
    }
}

fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// Stipulations the readers are fuzzed under: plain shogi and each kind of condition.
const RULES: [&str; 12] = [
    "ばか詰",
    "協力自玉詰",
    "受先ばか詰",
    "安南ばか詰",
    "安北打歩詰可ばか詰",
    "対面禁欲ばか詰",
    "背面強欲協力自玉詰",
    "キルケばか詰",
    "アンチキルケ受先ばか詰",
    "PWC協力自玉詰",
    "マドラシばか詰",
    "Kマドラシ安南キルケばか詰",
];

/// The stipulation the first byte picks, and the rest of the input as text.
fn stipulation_and_text(data: &[u8]) -> (Stipulation, String) {
    let (first, rest) = data.split_first().unwrap_or((&0, &[]));
    let name = RULES[*first as usize % RULES.len()];
    let stipulation = Stipulation::parse(name).expect("a stipulation the engine names");
    (stipulation, text(rest))
}

fn rules_and_text(data: &[u8]) -> (RuleSet, String) {
    let (stipulation, text) = stipulation_and_text(data);
    (stipulation.rules(), text)
}

/// An SFEN read is written back as one that reads the same, and its moves can be generated.
fn sfen(data: &[u8]) {
    let (stipulation, text) = stipulation_and_text(data);
    let rules = stipulation.rules();
    if let Ok(pos) = Position::from_sfen_under(&text, rules) {
        let written = pos.to_sfen();
        let again = Position::from_sfen_under(&written, rules).expect("its own SFEN reads back");
        assert_eq!(again.to_sfen(), written);
        let _ = stipulation.check_position(&pos);
        perft_rules(&mut pos.clone(), 1, true, rules);
    }
}

/// A `position ...` line, and a position of a problem as `--probe` names it.
fn position_line(data: &[u8]) {
    let (rules, text) = rules_and_text(data);
    if let Ok(line) = PositionLine::parse(&text) {
        let _ = line.build(rules);
    }
    let _ = problem::position_of_problem(&Position::startpos(), &text, rules);
}

/// A BOD diagram read is written back as one that reads the same; what a file says around it
/// (its stipulation, its length) is read too.
fn bod(data: &[u8]) {
    let (rules, text) = rules_and_text(data);
    if let Ok(pos) = parse_bod_under(&text, rules) {
        let again = parse_bod_under(&to_bod(&pos), rules).expect("its own diagram reads back");
        assert_eq!(again.to_sfen(), pos.to_sfen());
    }
    let _ = problem::parse_problem_and_stipulation(&text, Format::Auto, |named| {
        named.unwrap_or_default()
    });
    let _ = problem::named_length(&text, Format::Auto);
}

/// Every line a GUI or a script may send, and the options' values.
fn usi_command(data: &[u8]) {
    for line in text(data).lines() {
        if let Ok(Command::SetOption { name, value }) = Command::parse(line) {
            let _ = crate::usi::options::parse_change(&name, value.as_deref());
        }
    }
}

/// The rules as composers write them: a stipulation read is named back in words that read the
/// same.
fn rules(data: &[u8]) {
    let text = text(data);
    if let Ok((stipulation, _)) = Stipulation::parse_stated(&text) {
        let named = stipulation.japanese();
        assert_eq!(Stipulation::parse(&named), Ok(stipulation), "{named}");
    }
    let _ = Stipulation::parse(&text);
    let _ = Conditions::parse_prefix(&text);
}

/// A whole USI session: the engine given a script of any lines, every `go` limited to 20 ms,
/// in a small table on one thread; whatever the lines, it answers and ends. (Options that would
/// only make a run slower or bigger — the table's size, threads, directories to write in — and
/// `probe`, which searches for seconds, are left out of the script.)
fn usi_session(data: &[u8]) {
    let text = text(data);
    let mut script = String::new();
    for line in text.lines().take(64) {
        let lower = line.to_ascii_lowercase();
        let words: Vec<&str> = lower.split_whitespace().collect();
        let slow_option = words.first() == Some(&"setoption")
            && ["hash", "threads", "dir", "checkpoint", "diskcap"]
                .iter()
                .any(|name| lower.contains(name));
        match words.first() {
            _ if slow_option => {}
            Some(&"probe") => {}
            Some(&"go") => script.push_str("go mate 20\n"),
            _ => {
                script.push_str(line);
                script.push('\n');
            }
        }
    }
    let config = crate::config::EngineConfig {
        hash_mb: 1,
        threads: 1,
        ..Default::default()
    };
    let output = crate::usi::Output::new(Box::new(std::io::sink()));
    crate::usi::run(config, std::io::Cursor::new(script), output, |_| {});
}
