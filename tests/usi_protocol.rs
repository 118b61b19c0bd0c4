//! The USI protocol surface: handshake, stop / re-search, time limits, `isready` during a search,
//! and bad input that must produce one `info string error: ...` line and leave the engine working.

mod common;

use common::{helpmates, Engine};
use std::time::{Duration, Instant};

fn sfen_of(name: &str) -> String {
    helpmates()
        .into_iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("{name} in helpmates.tsv"))
        .sfen
}

fn plies_of(name: &str) -> u32 {
    helpmates()
        .into_iter()
        .find(|p| p.name == name)
        .unwrap()
        .plies
}

/// A 57-ply problem, about 0.1 s: a stop may or may not arrive before its answer.
const SLOW: &str = "fmrs_test_solve_16";
/// A problem far beyond any short time limit.
const HARD: &str = "fmrs_chain_207";
const QUICK: &str = "fmrs_test_solve_15";

#[test]
fn handshake_declares_options() {
    let mut e = Engine::start();
    e.send("usi");
    let lines = e.read_until(Duration::from_secs(5), |l| l == "usiok");
    assert!(lines[0].starts_with("id name kyozume "), "{lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("id author ")));
    assert!(lines
        .iter()
        .any(|l| l.starts_with("option name USI_Hash type spin default ")));
    assert!(lines
        .iter()
        .any(|l| l.starts_with("option name Threads type spin")));
    e.send("isready");
    e.read_until(Duration::from_secs(5), |l| l == "readyok");
    e.send("usinewgame");
    e.send("setoption name USI_Ponder value true");
    assert!(e.sync().is_empty(), "USI_Ponder is accepted silently");
    e.quit();
}

/// A problem that takes one thread a second or more (1.5 s here), whatever the machine's cores:
/// a `stop` 150 ms in is sure to land inside its search.
const SLOW_AT_ONE_THREAD: &str = "fmrs_morishige_1965";

#[test]
fn stop_then_go_again_gives_the_right_answer() {
    let mut e = Engine::start();
    e.send("setoption name Threads value 1");
    e.sync();
    let sfen = sfen_of(SLOW_AT_ONE_THREAD);
    e.send(&format!("position sfen {sfen}"));
    e.send("go mate infinite");
    std::thread::sleep(Duration::from_millis(150));
    let sent = Instant::now();
    e.send("stop");
    let lines = e.read_until(Duration::from_secs(5), |l| l.starts_with("checkmate"));
    assert!(
        sent.elapsed() < Duration::from_millis(500),
        "stop answered late"
    );
    assert_eq!(lines.last().unwrap(), "checkmate timeout");
    // Again, with and without usinewgame / isready in between, and with more threads.
    for prelude in [
        &[][..],
        &["usinewgame", "isready", "setoption name Threads value 2"][..],
    ] {
        for p in prelude {
            e.send(p);
        }
        let (_, last) = e.go_mate(&sfen, "infinite", Duration::from_secs(120));
        let plies = last.split_whitespace().count() as u32 - 1;
        assert_eq!(
            plies,
            plies_of(SLOW_AT_ONE_THREAD),
            "{}",
            &last[..last.len().min(200)]
        );
    }
    e.quit();
}

#[test]
fn a_time_limit_ends_in_timeout_promptly() {
    let mut e = Engine::start();
    // As a GUI does: `isready` first, which returns once the table is allocated.
    e.sync();
    let start = Instant::now();
    let (lines, last) = e.go_mate(&sfen_of(HARD), "200", Duration::from_secs(5));
    assert_eq!(last, "checkmate timeout");
    assert!(
        start.elapsed() < Duration::from_millis(700),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("checkmate")).count(),
        1
    );
    e.quit();
}

#[test]
fn isready_during_a_search_does_not_end_it_and_info_lines_flow() {
    let mut e = Engine::start();
    e.sync();
    e.send(&format!("position sfen {}", sfen_of(HARD)));
    e.send("go mate 2500");
    std::thread::sleep(Duration::from_millis(300));
    let sent = Instant::now();
    e.send("isready");
    let before = e.read_until(Duration::from_secs(2), |l| l == "readyok");
    assert!(sent.elapsed() < Duration::from_millis(200));
    assert!(
        before.iter().all(|l| !l.starts_with("checkmate")),
        "{before:?}"
    );
    let rest = e.read_until(Duration::from_secs(10), |l| l.starts_with("checkmate"));
    assert_eq!(rest.last().unwrap(), "checkmate timeout");
    // At least one progress line a second, each with the required fields.
    let infos: Vec<&String> = before
        .iter()
        .chain(rest.iter())
        .filter(|l| l.starts_with("info depth"))
        .collect();
    assert!(infos.len() >= 2, "{infos:?}");
    for l in infos {
        for field in [" nodes ", " nps ", " hashfull ", " time "] {
            assert!(l.contains(field), "{l}");
        }
    }
    e.quit();
}

#[test]
fn quit_during_a_search_is_prompt() {
    let mut e = Engine::start();
    e.sync();
    e.send(&format!("position sfen {}", sfen_of(HARD)));
    e.send("go mate infinite");
    std::thread::sleep(Duration::from_millis(200));
    assert!(e.quit() < Duration::from_millis(500));
}

#[test]
fn bad_input_gives_one_error_line_and_the_engine_carries_on() {
    let mut e = Engine::start();
    let quick = sfen_of(QUICK);
    e.send(&format!("position sfen {quick}"));
    e.sync();
    let bad = [
        "foo",
        "position sfen 9/9/9 b - 1",
        "position sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1 moves 7g7e",
        "position startpos moves 7g7f 7g7f",
        "position startpos moves zz",
        "position",
        "setoption name USI_Hash value -5",
        "setoption name USI_Hash value many",
        "setoption name NoSuchOption value 1",
        "setoption name Threads value 0",
        "go mate soon",
        "isready now",
        "position sfen 4k4/9/9/9/9/9/9/9/4K4 b - 1 moves",
        "\u{3042}\u{3044}",
    ];
    for line in bad {
        e.send(line);
        let out = e.sync();
        let errors = out
            .iter()
            .filter(|l| l.starts_with("info string error: "))
            .count();
        // One valid case above is not an error: a SFEN with an empty move list.
        if line.ends_with("moves") {
            assert!(out.is_empty(), "{line}: {out:?}");
            continue;
        }
        assert_eq!(errors, 1, "{line}: {out:?}");
        assert!(out.iter().all(|l| l.is_ascii()), "{out:?}");
    }
    // The last good position is kept through all the bad ones... except the valid SFEN
    // line, which replaced it; set it back and solve.
    e.send(&format!("position sfen {quick}"));
    e.send("go mate infinite");
    let lines = e.read_until(Duration::from_secs(30), |l| l.starts_with("checkmate"));
    let plies = lines.last().unwrap().split_whitespace().count() as u32 - 1;
    assert_eq!(plies, plies_of(QUICK));
    e.quit();
}

#[test]
fn a_failed_position_keeps_the_previous_one() {
    let mut e = Engine::start();
    let quick = sfen_of(QUICK);
    e.send(&format!("position sfen {quick}"));
    e.send("position sfen this is not a position");
    e.send("d");
    let out = e.sync();
    assert!(out.iter().any(|l| l.starts_with("info string error: ")));
    assert!(out.iter().any(|l| *l == format!("sfen {quick}")), "{out:?}");
    e.quit();
}

#[test]
fn game_go_resigns_and_a_missing_defender_king_is_reported() {
    let mut e = Engine::start();
    e.send("position startpos");
    e.send("go btime 1000 wtime 1000 byoyomi 1000");
    let lines = e.read_until(Duration::from_secs(5), |l| l.starts_with("bestmove"));
    assert_eq!(lines.last().unwrap(), "bestmove resign");
    assert!(lines[0].starts_with("info string"));
    let (lines, last) = e.go_mate(
        "9/9/9/9/9/9/9/9/4K4 b G 1",
        "infinite",
        Duration::from_secs(5),
    );
    assert_eq!(last, "checkmate nomate");
    assert!(lines.iter().any(|l| l.starts_with("info string error: ")));
    e.quit();
}

#[test]
fn hash_resize_is_applied_and_a_huge_one_is_refused_gracefully() {
    let mut e = Engine::start();
    e.send("setoption name USI_Hash value 16");
    assert!(e.sync().is_empty());
    // More than this machine can give: the engine keeps its table and says so.
    e.send("setoption name USI_Hash value 1048576");
    let out = e.sync();
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(
        out[0].starts_with("info string error: cannot allocate"),
        "{out:?}"
    );
    let (_, last) = e.go_mate(&sfen_of(QUICK), "infinite", Duration::from_secs(60));
    assert_eq!(last.split_whitespace().count() as u32 - 1, plies_of(QUICK));
    e.quit();
}

/// `probe` after a search: the table's bound for the position, its moves' bounds, the shortest
/// line from it; `probe moves ...` from the current position; a bad SFEN is one error line.
#[test]
fn probe_shows_what_the_search_left_in_the_table() {
    let p = helpmates()
        .into_iter()
        .find(|p| p.name == "fmrs_test_solve_05")
        .unwrap();
    let mut e = Engine::start();
    let (_, last) = e.go_mate(&p.sfen, "infinite", Duration::from_secs(30));
    assert_eq!(last, format!("checkmate {}", p.line.join(" ")));
    let probe = |e: &mut Engine, command: &str| {
        e.send(command);
        e.sync()
    };
    let root = probe(&mut e, "probe");
    assert!(
        root.iter().all(|l| l.starts_with("info string probe: ")),
        "{root:?}"
    );
    assert!(root[0].ends_with("(attacker to move)"), "{root:?}");
    assert!(
        root.contains(&"info string probe: table: no helpmate shorter than 5 plies".to_string()),
        "{root:?}"
    );
    assert!(
        root.contains(&format!(
            "info string probe: shortest helpmate 5 plies: {}",
            p.line.join(" ")
        )),
        "{root:?}"
    );
    let after = probe(&mut e, &format!("probe moves {}", p.line[0]));
    assert!(
        after[0].ends_with("(defender to move, in check)"),
        "{after:?}"
    );
    assert!(
        after.contains(&format!(
            "info string probe: shortest helpmate 4 plies: {}",
            p.line[1..].join(" ")
        )),
        "{after:?}"
    );
    let mated = probe(&mut e, &format!("probe moves {}", p.line.join(" ")));
    assert!(
        mated.contains(&"info string probe: checkmate".to_string()),
        "{mated:?}"
    );
    let bad = probe(&mut e, "probe sfen 9/9/9 b - 1");
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(
        bad[0].starts_with("info string error: probe: bad SFEN"),
        "{bad:?}"
    );
    // The engine still answers normally afterwards.
    let (_, last) = e.go_mate(&p.sfen, "infinite", Duration::from_secs(30));
    assert_eq!(last, format!("checkmate {}", p.line.join(" ")));
    e.quit();
}

/// At 4 threads: a time limit and `stop` end the search promptly, and what a stopped search
/// left in the table does not change the next answer.
#[test]
fn four_threads_stop_promptly_and_leave_no_false_bounds() {
    let mut e = Engine::start();
    e.send("setoption name Threads value 4");
    e.sync();
    let start = Instant::now();
    let (_, last) = e.go_mate(&sfen_of(HARD), "300", Duration::from_secs(5));
    assert_eq!(last, "checkmate timeout");
    assert!(
        start.elapsed() < Duration::from_millis(800),
        "{:?}",
        start.elapsed()
    );
    for problem in [SLOW, HARD] {
        e.send(&format!("position sfen {}", sfen_of(problem)));
        e.send("go mate infinite");
        std::thread::sleep(Duration::from_millis(300));
        let sent = Instant::now();
        e.send("stop");
        let lines = e.read_until(Duration::from_secs(5), |l| l.starts_with("checkmate"));
        assert!(
            sent.elapsed() < Duration::from_millis(500),
            "{problem}: stop answered late"
        );
        // SLOW may have been solved before the stop arrived.
        let last = lines.last().unwrap();
        assert!(last == "checkmate timeout" || problem == SLOW, "{last}");
    }
    // The stopped searches left only sound bounds: the slow problem still gets its length.
    let (_, last) = e.go_mate(&sfen_of(SLOW), "infinite", Duration::from_secs(120));
    assert_eq!(
        last.split_whitespace().count() as u32 - 1,
        plies_of(SLOW),
        "{last}"
    );
    e.quit();
}

/// The end of input when nobody reads the output any more (the GUI is gone) ends a search at
/// four threads promptly; with the output still read, it lets the work finish (`usi_script.rs`).
#[test]
fn end_of_input_with_the_reader_gone_ends_a_four_thread_search_promptly() {
    use std::io::{BufRead, BufReader, Write};
    let mut child = common::spawn_kyozume(&[]);
    let mut stdin = child.stdin.take().unwrap();
    let script = format!(
        "setoption name Threads value 4\nposition sfen {}\ngo mate infinite\n",
        sfen_of(HARD)
    );
    stdin.write_all(script.as_bytes()).unwrap();
    stdin.flush().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("info depth") {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the search runs");
    }
    std::thread::sleep(Duration::from_millis(300));
    let closed = Instant::now();
    drop(stdout);
    drop(stdin);
    let exited = loop {
        if let Ok(Some(_)) = child.try_wait() {
            break closed.elapsed();
        }
        if closed.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            panic!("the engine kept searching with its input and output closed");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // Measured 30-40 ms; an engine that only noticed at its next `info` line took 300 ms.
    assert!(exited < Duration::from_millis(200), "{exited:?}");
}
