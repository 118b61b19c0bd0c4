//! USI as a script: a whole session written to the engine at once, stdin closed without
//! waiting. Commands take effect in the order they arrive, every `go` gets exactly one reply,
//! error lines come in the order of the bad commands, and the end of input finishes the work.

mod common;

use common::{helpmates, nomates, run_script, Helpmate};
use std::time::Duration;

fn problem(name: &str) -> Helpmate {
    helpmates()
        .into_iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("{name} in helpmates.tsv"))
}

/// A unique short problem's reply: its published line.
fn answer(p: &Helpmate) -> String {
    assert_eq!(p.solutions, "1", "{}", p.name);
    format!("checkmate {}", p.line.join(" "))
}

/// Far beyond any time limit used here.
const HARD: &str = "fmrs_chain_207";

/// The lines a GUI acts on: the replies, without progress and solution-count lines.
fn replies(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| !l.starts_with("info") || l.starts_with("info string error: "))
        .filter(|l| !l.starts_with("id ") && !l.starts_with("option "))
        .cloned()
        .collect()
}

fn script(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

#[test]
fn problems_back_to_back_are_all_answered_in_order() {
    let quick: Vec<Helpmate> = ["fmrs_test_solve_02", "fmrs_test_solve_05", "fmrs_ofm-139_5"]
        .iter()
        .map(|n| problem(n))
        .collect();
    let nomate = nomates().remove(0);
    let mut commands = vec!["usi".to_string(), "isready".to_string()];
    let mut expected = vec!["usiok".to_string(), "readyok".to_string()];
    for p in &quick {
        commands.push(format!("position sfen {}", p.sfen));
        commands.push("go mate 20000".to_string());
        expected.push(answer(p));
    }
    commands.push(format!("position sfen {}", nomate.1));
    commands.push("go mate 20000".to_string());
    expected.push("checkmate nomate".to_string());
    // The issue's own example: the second problem has no attacking material at all.
    commands.push("position sfen 4k4/9/4P4/9/9/9/9/9/9 b G 1".to_string());
    commands.push("go mate 5000".to_string());
    commands.push("position sfen 4k4/9/9/9/9/9/9/9/9 b - 1".to_string());
    commands.push("go mate 5000".to_string());
    expected.push("checkmate G*5b".to_string());
    expected.push("checkmate nomate".to_string());
    let (lines, status, _) = run_script(&script(&commands), Duration::from_secs(120));
    assert!(status.success(), "{status:?}");
    assert_eq!(replies(&lines), expected, "{lines:#?}");
}

/// The hard problem searched under `first_go` (with `between` after it), then a quick one:
/// its replies must be a timeout, then the quick problem's line. Returns the time taken.
fn hard_then_quick(first_go: &str, between: &[&str], quick: &str) -> Duration {
    let quick = problem(quick);
    let mut commands = vec![
        format!("position sfen {}", problem(HARD).sfen),
        first_go.to_string(),
    ];
    commands.extend(between.iter().map(|c| c.to_string()));
    commands.push(format!("position sfen {}", quick.sfen));
    commands.push("go mate 20000".to_string());
    let (lines, status, elapsed) = run_script(&script(&commands), Duration::from_secs(60));
    assert!(status.success());
    assert_eq!(
        replies(&lines),
        ["checkmate timeout".to_string(), answer(&quick)],
        "{lines:#?}"
    );
    elapsed
}

#[test]
fn stop_ends_the_running_search_and_the_next_go_is_answered() {
    let elapsed = hard_then_quick("go mate infinite", &["stop"], "fmrs_test_solve_05");
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
}

#[test]
fn a_go_during_a_search_waits_for_it() {
    let elapsed = hard_then_quick("go mate 1000", &[], "fmrs_test_solve_03");
    // The first search ran its whole second.
    assert!(elapsed >= Duration::from_millis(1000), "{elapsed:?}");
}

#[test]
fn isready_setoption_usinewgame_and_errors_keep_their_order() {
    let first = problem("fmrs_test_solve_05");
    let second = problem("fmrs_ofm-139_5");
    let hard = problem(HARD);
    let commands = [
        "usi".to_string(),
        "setoption name USI_Hash value 64".to_string(),
        "isready".to_string(),
        "usinewgame".to_string(),
        format!("position sfen {}", first.sfen),
        "go mate 20000".to_string(),
        // Between searches (queued behind the first): applies to the next `go` only.
        "setoption name SolutionLimit value 1".to_string(),
        format!("position sfen {}", hard.sfen),
        "go mate 1500".to_string(),
        // During the 1.5 s search: `isready` at once, the rest in order after it.
        "isready".to_string(),
        "setoption name USI_Hash value -5".to_string(),
        "usinewgame".to_string(),
        "no such command".to_string(),
        format!("position sfen {}", second.sfen),
        "go mate 20000".to_string(),
        "setoption name USI_Hash value 32".to_string(),
    ];
    let (lines, status, _) = run_script(&script(&commands), Duration::from_secs(60));
    assert!(status.success());
    let got = replies(&lines);
    assert_eq!(got.len(), 8, "{lines:#?}");
    assert_eq!(got[..3], ["usiok", "readyok", "readyok"], "{lines:#?}");
    assert_eq!(got[3], answer(&first), "{lines:#?}");
    assert_eq!(got[4], "checkmate timeout", "{lines:#?}");
    assert!(got[5].starts_with("info string error: ") && got[5].contains("USI_Hash"));
    assert!(got[6].starts_with("info string error: ") && got[6].contains("no"));
    assert_eq!(got[7], answer(&second), "{lines:#?}");
    // SolutionLimit 1 reached the searches after it, not the one before.
    let counted = |reply: &str| {
        let at = lines.iter().position(|l| l == reply).unwrap();
        let from = lines[..at]
            .iter()
            .rposition(|l| l.starts_with("checkmate"))
            .map_or(0, |i| i + 1);
        lines[from..at]
            .iter()
            .any(|l| l.starts_with("info string solutions"))
    };
    assert!(counted(&answer(&first)), "{lines:#?}");
    assert!(!counted(&answer(&second)), "{lines:#?}");
}

#[test]
fn the_end_of_input_finishes_a_long_search() {
    let slow = problem("fmrs_test_solve_16");
    let commands = [
        format!("position sfen {}", slow.sfen),
        "go mate 60000".to_string(),
    ];
    let (lines, status, _) = run_script(&script(&commands), Duration::from_secs(120));
    assert!(status.success(), "{status:?}");
    assert_eq!(replies(&lines), [answer(&slow)], "{lines:#?}");
}

#[test]
fn quit_during_a_search_is_immediate() {
    let mut engine = common::Engine::start();
    // Timed from `readyok`: the engine's start and its tables' first pages are not what this
    // asks about (taking fresh pages on the test machine's virtual machine took up to 2 s).
    let before = engine.sync();
    let start = std::time::Instant::now();
    let commands = [
        format!("position sfen {}", problem(HARD).sfen),
        "go mate infinite".to_string(),
        "go mate infinite".to_string(),
        "quit".to_string(),
        "go mate infinite".to_string(),
    ];
    let (lines, status) = engine.finish(&script(&commands), Duration::from_secs(30));
    let elapsed = start.elapsed();
    assert!(status.success());
    // Each `go` before `quit` gets its one reply; nothing after `quit` is read.
    assert_eq!(replies(&before), Vec::<&str>::new(), "{before:#?}");
    assert_eq!(
        replies(&lines),
        ["checkmate timeout", "checkmate timeout"],
        "{lines:#?}"
    );
    assert!(elapsed < Duration::from_millis(1500), "{elapsed:?}");
}

#[test]
fn sigint_and_sigterm_stop_the_search_with_its_reply() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    for signal in ["-INT", "-TERM"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kyozume"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        // stdin stays open: the signal, not the end of input, ends the engine.
        writeln!(
            stdin,
            "position sfen {}\ngo mate infinite\ngo mate infinite",
            problem(HARD).sfen
        )
        .unwrap();
        stdin.flush().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        // The search has started once its first depth is out (after the stipulation's line).
        let mut first = String::new();
        while first.is_empty() || first.starts_with("info string") {
            first.clear();
            out.read_line(&mut first).unwrap();
        }
        assert!(first.starts_with("info depth"), "{first}");
        let sent = std::time::Instant::now();
        let kill = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(kill.success());
        let status = child.wait().unwrap();
        assert!(sent.elapsed() < Duration::from_millis(1000), "{signal}");
        assert_eq!(status.code(), Some(130), "{signal}");
        let rest: Vec<String> = out.lines().map_while(Result::ok).collect();
        assert_eq!(
            replies(&rest),
            ["checkmate timeout", "checkmate timeout"],
            "{signal}: {rest:?}"
        );
        drop(stdin);
    }
}
