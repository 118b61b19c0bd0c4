//! Every helpmate of at most 120 plies in the reference data, solved through the real USI loop:
//! the engine must return exactly the published shortest length, and the returned line must
//! replay in the rules core as a helpmate. Positions without any helpmate give `checkmate nomate`.

mod common;

use common::{helpmates, nomates, Engine, Helpmate};
use kyozume::search::verify_helpmate;
use kyozume::shogi::Position;
use std::time::Duration;

const MAX_PLIES: u32 = 120;

fn parse_line(pos: &Position, moves: &[&str]) -> Vec<kyozume::shogi::Move> {
    let mut p = pos.clone();
    moves
        .iter()
        .map(|text| {
            let m = p.parse_move(text).unwrap_or_else(|e| panic!("{e}"));
            p.do_move(m);
            m
        })
        .collect()
}

/// With the default SolutionLimit of 2: a problem published as unique says so, one with two or
/// more solutions says `solutions 2+` (the limit reached) and prints one alternative that replays as a helpmate of
/// the same length, different from the main line.
fn check_solution_lines(p: &Helpmate, root: &Position, lines: &[String]) -> Result<(), String> {
    let verdict = lines
        .iter()
        .find_map(|l| l.strip_prefix("info string solutions "))
        .ok_or_else(|| format!("{}: no solutions line", p.name))?;
    let alts: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("info string alt "))
        .collect();
    let expected = match p.solutions.as_str() {
        "1" => "1 unique",
        "2" | "2+" => "2+ (SolutionLimit 2 reached)",
        _ => return Ok(()), // not counted by the source
    };
    if verdict != expected {
        return Err(format!(
            "{}: solutions '{verdict}', expected '{expected}'",
            p.name
        ));
    }
    let want_alts = if expected == "1 unique" { 0 } else { 1 };
    if alts.len() != want_alts {
        return Err(format!("{}: {} alternatives printed", p.name, alts.len()));
    }
    for alt in alts {
        let moves: Vec<&str> = alt.split_whitespace().collect();
        let line = parse_line(root, &moves);
        if line.len() as u32 != p.plies {
            return Err(format!("{}: alternative of {} plies", p.name, line.len()));
        }
        verify_helpmate(root, &line).map_err(|e| format!("{}: alternative: {e}", p.name))?;
        let main = lines
            .last()
            .unwrap()
            .split_whitespace()
            .skip(1)
            .collect::<Vec<_>>();
        if moves == main {
            return Err(format!("{}: the alternative repeats the main line", p.name));
        }
    }
    Ok(())
}

fn solve_all(problems: &[&Helpmate]) -> Vec<String> {
    let mut failures = Vec::new();
    let mut engine = Engine::start();
    engine.send("usi");
    engine.read_until(Duration::from_secs(10), |l| l == "usiok");
    engine.send("setoption name USI_Hash value 64");
    engine.sync();
    for p in problems {
        let (lines, last) = engine.go_mate(&p.sfen, "infinite", Duration::from_secs(120));
        let checkmates = lines.iter().filter(|l| l.starts_with("checkmate")).count();
        assert_eq!(checkmates, 1, "{}: one checkmate line per go", p.name);
        let moves: Vec<&str> = last.split_whitespace().skip(1).collect();
        if moves.len() as u32 != p.plies {
            failures.push(format!(
                "{}: expected {} plies, got '{last}'",
                p.name, p.plies
            ));
            continue;
        }
        let root = Position::from_sfen(&p.sfen).unwrap();
        let line = parse_line(&root, &moves);
        if let Err(e) = verify_helpmate(&root, &line) {
            failures.push(format!("{}: returned line is not a helpmate: {e}", p.name));
        }
        if let Err(e) = check_solution_lines(p, &root, &lines) {
            failures.push(e);
        }
        // The final info line announces the mate with its principal variation.
        let info = &lines[lines.len() - 2];
        assert!(
            info.contains(&format!("score mate {}", p.plies)) && info.ends_with(&moves.join(" ")),
            "{}: {info}",
            p.name
        );
    }
    assert!(engine.quit() < Duration::from_secs(2));
    failures
}

#[test]
fn published_helpmates_up_to_120_plies_are_solved_exactly() {
    let all = helpmates();
    let chosen: Vec<&Helpmate> = all.iter().filter(|p| p.plies <= MAX_PLIES).collect();
    assert!(
        chosen.len() >= 100,
        "expected the short problems, got {}",
        chosen.len()
    );
    // Two engine processes, one per core.
    let (even, odd): (Vec<(usize, &Helpmate)>, Vec<_>) = chosen
        .iter()
        .copied()
        .enumerate()
        .partition(|(i, _)| i % 2 == 0);
    let even: Vec<&Helpmate> = even.into_iter().map(|(_, p)| p).collect();
    let odd: Vec<&Helpmate> = odd.into_iter().map(|(_, p)| p).collect();
    let failures = std::thread::scope(|s| {
        let a = s.spawn(|| solve_all(&even));
        let b = s.spawn(|| solve_all(&odd));
        let mut f = a.join().unwrap();
        f.extend(b.join().unwrap());
        f
    });
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn exactly_two_solutions_are_counted_exactly() {
    // With a limit of 3, a problem published with exactly two solutions must count 2, not more.
    let mut engine = Engine::start();
    engine.send("setoption name SolutionLimit value 3");
    let rows = helpmates();
    let exact: Vec<&Helpmate> = rows.iter().filter(|p| p.solutions == "2").collect();
    assert!(!exact.is_empty());
    for p in exact {
        let (lines, _) = engine.go_mate(&p.sfen, "infinite", Duration::from_secs(60));
        assert!(
            lines.iter().any(|l| l == "info string solutions 2"),
            "{}: {lines:?}",
            p.name
        );
    }
    engine.quit();
}

#[test]
fn positions_without_helpmate_give_nomate() {
    let mut engine = Engine::start();
    let rows = nomates();
    assert!(!rows.is_empty());
    for (name, sfen) in rows {
        let (_, last) = engine.go_mate(&sfen, "infinite", Duration::from_secs(60));
        assert_eq!(last, "checkmate nomate", "{name}");
    }
    engine.quit();
}

#[test]
fn published_lines_replay_as_helpmates() {
    // The reference lines themselves must pass the verifier the tests rely on, and a corrupted
    // line must not.
    let mut checked = 0;
    for p in helpmates()
        .iter()
        .filter(|p| !p.line.is_empty() && p.plies <= 2000)
    {
        let root = Position::from_sfen(&p.sfen).unwrap();
        let moves: Vec<&str> = p.line.iter().map(String::as_str).collect();
        let line = parse_line(&root, &moves);
        assert_eq!(line.len() as u32, p.plies, "{}", p.name);
        verify_helpmate(&root, &line).unwrap_or_else(|e| panic!("{}: {e}", p.name));
        if line.len() >= 3 {
            assert!(
                verify_helpmate(&root, &line[..line.len() - 2]).is_err(),
                "{}",
                p.name
            );
        }
        checked += 1;
    }
    assert!(checked >= 100);
}
