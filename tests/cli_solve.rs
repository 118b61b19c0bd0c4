//! `kyozume solve`: formats in, reports out, solution counts, exit codes, batches (including an
//! interrupted one).

mod common;

use common::{helpmates, nomates};
use kyozume::search::verify_helpmate;
use kyozume::shogi::kif::to_bod;
use kyozume::shogi::Position;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn kyozume() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kyozume"))
}

/// Runs `kyozume` with a small table: these problems need little, and zeroing the default
/// 256 MB at every start would dominate the test's time.
fn run(args: &[&str]) -> (i32, String, String) {
    let mut all: Vec<&str> = args.to_vec();
    if args.first() == Some(&"solve") && !args.contains(&"--hash") {
        all.splice(1..1, ["--hash", "16"]);
    }
    let out = kyozume().args(&all).output().expect("run kyozume");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(line: &str) -> serde_json::Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

fn sfen_of(name: &str) -> String {
    helpmates()
        .into_iter()
        .find(|p| p.name == name)
        .unwrap()
        .sfen
}

fn replay(root: &Position, moves: &[serde_json::Value]) -> Vec<kyozume::shogi::Move> {
    let mut p = root.clone();
    moves
        .iter()
        .map(|m| {
            let m = p.parse_move(m.as_str().unwrap()).unwrap();
            p.do_move(m);
            m
        })
        .collect()
}

#[test]
fn published_solution_counts_through_the_cli() {
    let rows = helpmates();
    let counted: Vec<_> = rows
        .iter()
        .filter(|p| !p.solutions.is_empty() && p.plies <= 120)
        .collect();
    assert!(counted.len() >= 50);
    for p in counted {
        // Limit 3 so that "exactly 2" is told apart from "2 or more".
        let (code, out, err) = run(&["solve", "--json", "--solutions", "3", &p.sfen]);
        assert_eq!(code, 0, "{}: {err}", p.name);
        let v = json(out.trim());
        assert_eq!(v["status"], "mate");
        assert_eq!(v["plies"], p.plies as u64, "{}", p.name);
        let n = v["solutions"].as_u64().unwrap();
        // `complete`: the count is exact, not the limit reached.
        let complete = v["complete"].as_bool();
        match p.solutions.as_str() {
            "1" => assert_eq!((n, v["unique"].as_bool()), (1, Some(true)), "{}", p.name),
            "2" => assert_eq!((n, v["unique"].as_bool()), (2, Some(false)), "{}", p.name),
            "2+" => assert!(n >= 2 && v["unique"] == false, "{}: {n}", p.name),
            other => panic!("unexpected count {other}"),
        }
        assert_eq!(complete, Some(n < 3), "{}: {n}", p.name);
        let root = Position::from_sfen(&p.sfen).unwrap();
        let main = replay(&root, v["moves"].as_array().unwrap());
        verify_helpmate(&root, &main).unwrap();
        let alts = v["alternatives"].as_array().unwrap();
        assert_eq!(alts.len() as u64, n - 1, "{}", p.name);
        for alt in alts {
            let line = replay(&root, alt.as_array().unwrap());
            assert_eq!(line.len(), p.plies as usize);
            verify_helpmate(&root, &line).unwrap();
            assert_ne!(line, main);
        }
    }
}

#[test]
fn human_report_shows_diagram_verdict_and_both_notations() {
    let (code, out, _) = run(&["solve", &sfen_of("fm3_gold_only_5")]);
    assert_eq!(code, 0);
    assert!(out.contains("+---------------------------+"));
    assert!(out.contains("Shortest helpmate: 13 plies, at least 2 solutions"));
    assert!(out.contains("余詰"));
    assert!(out.contains("▲５七金 △４八玉 ▲５八金"));
    assert!(out.contains("usi: 5f5g 5h4h"));
    assert!(out.contains("Alternative 2, from ply 2:\n  △６八玉"));
    let (code, out, _) = run(&["solve", "--solutions", "1", &sfen_of("fmrs_test_solve_15")]);
    assert_eq!(code, 0);
    assert!(out.contains("27 plies, uniqueness not checked"));
}

#[test]
fn every_input_format_and_source() {
    let sfen = sfen_of("fmrs_test_solve_15");
    let pos = Position::from_sfen(&sfen).unwrap();
    let dir = std::env::temp_dir().join(format!("kyozume-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // BOD as UTF-8, KIF as Shift_JIS (as Kifu for Windows saves .kif), an SFEN file.
    let bod = dir.join("p.bod");
    std::fs::write(&bod, to_bod(&pos)).unwrap();
    let kif = dir.join("p.kif");
    let kif_text = format!(
        "開始日時：2026/11/22\n手合割：平手\n{}手数----指手---------消費時間--\n",
        to_bod(&pos)
    );
    let (sjis, _, _) = encoding_rs::SHIFT_JIS.encode(&kif_text);
    std::fs::write(&kif, &sjis).unwrap();
    let sfen_file = dir.join("p.sfen");
    std::fs::write(&sfen_file, format!("{sfen}\n")).unwrap();
    let position_cmd = format!("position sfen {sfen} moves");
    let sources: Vec<Vec<&str>> = vec![
        vec![&sfen],
        vec![&position_cmd],
        vec![bod.to_str().unwrap()],
        vec![kif.to_str().unwrap()],
        vec!["--format", "kif", kif.to_str().unwrap()],
        vec![sfen_file.to_str().unwrap()],
    ];
    for src in sources {
        let mut args = vec!["solve", "--json"];
        args.extend(src.iter());
        let (code, out, err) = run(&args);
        assert_eq!(code, 0, "{src:?}: {err}");
        assert_eq!(json(out.trim())["plies"], 27, "{src:?}");
    }
    // stdin, with and without `-`.
    for args in [vec!["solve", "--json"], vec!["solve", "--json", "-"]] {
        let mut child = kyozume()
            .args(&args)
            .args(["--hash", "16"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(to_bod(&pos).as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        assert_eq!(
            json(String::from_utf8_lossy(&out.stdout).trim())["plies"],
            27
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn exit_codes_tell_the_outcomes_apart() {
    let (_, sfen) = nomates().into_iter().next().unwrap();
    assert_eq!(run(&["solve", &sfen]).0, 1);
    let (code, _, err) = run(&["solve", "9/9/9 b - 1"]);
    assert_eq!(code, 2);
    assert!(err.contains("board has 3 ranks"), "{err}");
    let (code, out, _) = run(&[
        "solve",
        "--json",
        "--format",
        "bod",
        &sfen_of("fmrs_test_solve_15"),
    ]);
    assert_eq!(code, 2);
    assert_eq!(json(out.trim())["status"], "error");
    let (code, out, _) = run(&[
        "solve",
        "--json",
        "--time-limit",
        "0.3",
        &sfen_of("fmrs_chain_207"),
    ]);
    assert_eq!(code, 3);
    let v = json(out.trim());
    assert_eq!(v["status"], "unsolved");
    assert!(v["plies"].is_null() && v["error"].is_null());
    assert_eq!(run(&["solve", "--time-limit", "-1", &sfen]).0, 2);
    // A position the stipulation cannot take: said on stderr, nothing on stdout.
    for args in [
        vec!["solve", "4k4/9/9/9/9/9/9/9/9 w G 1"],
        vec!["solve", "--rules", "HS#", "4k4/9/9/9/9/9/9/9/9 b G 1"],
    ] {
        let (code, out, err) = run(&args);
        assert_eq!((code, out.as_str()), (2, ""), "{args:?}");
        assert!(err.starts_with("kyozume solve: "), "{args:?}: {err}");
    }
    // A --config that cannot be read is an error for every command, not silently ignored.
    for command in [
        &["perft", "1"][..],
        &["solve", &sfen],
        &["bench", "--filter", "x"],
    ] {
        let mut args = vec!["--config", "/no/such/engine.toml"];
        args.extend_from_slice(command);
        let (code, _, err) = run(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("/no/such/engine.toml"), "{args:?}: {err}");
    }
}

#[test]
fn a_missing_file_or_too_much_hash_is_said_as_such() {
    for (arg, said) in [
        ("/no/such/problem.kif", "/no/such/problem.kif: No such file"),
        ("/", "/: Is a directory"),
    ] {
        let (code, _, err) = run(&["solve", arg]);
        assert_eq!(code, 2, "{arg}: {err}");
        assert!(err.contains(said), "{arg}: {err}");
    }
    let sfen = sfen_of("fmrs_test_solve_15");
    // 1 TB, the largest `--hash` (as `USI_Hash`): more than a test machine has.
    let (code, _, err) = run(&["solve", "--hash", "1048576", &sfen]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot allocate 1048576 MB"), "{err}");
    // Out of range, as for the USI options: refused before anything is allocated.
    for (flag, value) in [
        ("--hash", "0"),
        ("--solutions", "0"),
        ("--solutions", "1001"),
    ] {
        let (code, _, err) = run(&["solve", flag, value, &sfen]);
        assert_eq!(code, 2, "{flag} {value}: {err}");
        assert!(err.contains("invalid value"), "{flag} {value}: {err}");
    }
}

/// Runs `kyozume args` with its stdout a pipe whose reading end is closed before the process
/// starts (so that even a fast command cannot write first): the answer is lost, but the command
/// says so and exits with status 4 (no panic).
fn run_with_stdout_closed(args: &[&str]) -> (i32, String) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let child = kyozume()
        .args(args)
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kyozume");
    let out = child.wait_with_output().expect("wait for kyozume");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap_or(-1), err)
}

#[test]
fn a_closed_stdout_is_an_error_not_a_panic() {
    let sfen = sfen_of("fmrs_test_solve_15");
    for args in [
        vec!["solve", "--hash", "16", sfen.as_str()],
        vec!["solve", "--hash", "16", "--json", sfen.as_str()],
        vec!["perft", "3"],
    ] {
        let (code, err) = run_with_stdout_closed(&args);
        assert_eq!(code, 4, "{args:?}: {err}");
        assert!(err.contains("cannot write"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

fn write_batch(name: &str, lines: &[String]) -> std::path::PathBuf {
    let path =
        std::env::temp_dir().join(format!("kyozume-batch-{}-{name}.tsv", std::process::id()));
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

#[test]
fn batch_with_good_bad_and_nomate_lines() {
    let (_, nomate) = nomates().into_iter().next().unwrap();
    let lines = vec![
        "# a comment, then a header".to_string(),
        "name\tsfen\tplies".to_string(),
        format!("two\t{}\t3", sfen_of("fmrs_two_answers")),
        format!("gold5\t{}\t13", sfen_of("fm3_gold_only_5")),
        "broken\tnot an sfen at all".to_string(),
        format!("none\t{nomate}"),
        String::new(),
        sfen_of("fmrs_test_solve_15"),
    ];
    let file = write_batch("mixed", &lines);
    let (code, out, _) = run(&["solve", "--batch", file.to_str().unwrap()]);
    assert_eq!(code, 0);
    let rows: Vec<&str> = out.lines().collect();
    assert_eq!(rows.len(), 6, "{out}");
    assert!(
        rows[0].starts_with("two\tmate\t3\tat least 2 solutions"),
        "{}",
        rows[0]
    );
    assert!(rows[2].starts_with("broken\terror"), "{}", rows[2]);
    assert!(rows[2].contains("line 5"), "{}", rows[2]);
    assert!(rows[3].starts_with("none\tnomate"), "{}", rows[3]);
    assert!(rows[4].starts_with("-\tmate\t27\tunique"), "{}", rows[4]);
    assert!(
        rows[5].starts_with(
            "summary: 5 problems: solved 3 (unique 1, cooked 2), no helpmate 1, none within the bound 0, unsolved 0, errors 1"
        ),
        "{}",
        rows[5]
    );
    // JSON mode: one object per problem and a summary object.
    let (_, out, _) = run(&["solve", "--json", "--batch", file.to_str().unwrap()]);
    let objs: Vec<serde_json::Value> = out.lines().map(json).collect();
    assert_eq!(objs.len(), 6);
    assert_eq!(objs[2]["status"], "error");
    assert_eq!(objs[5]["summary"]["no_helpmate"], 1);
    std::fs::remove_file(file).unwrap();
}

#[cfg(unix)]
#[test]
fn an_interrupted_batch_keeps_every_finished_result() {
    // Two quick problems, then one that takes far longer than the test waits.
    let lines = vec![
        format!("a\t{}", sfen_of("fmrs_two_answers")),
        format!("b\t{}", sfen_of("fmrs_test_solve_15")),
        format!("slow\t{}", sfen_of("fmrs_chain_207")),
        format!("never\t{}", sfen_of("fmrs_test_solve_01")),
    ];
    let file = write_batch("interrupt", &lines);
    let out_path = file.with_extension("out");
    let out_file = std::fs::File::create(&out_path).unwrap();
    let mut child = kyozume()
        .args(["solve", "--hash", "16", "--batch", file.to_str().unwrap()])
        .stdout(out_file)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until both quick results are on disk, then interrupt during the slow one.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(&out_path).unwrap_or_default();
        if text.lines().count() >= 2 {
            break;
        }
        assert!(Instant::now() < deadline, "results did not appear: {text}");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let code = child.wait().unwrap().code();
    assert_eq!(code, Some(130));
    let text = std::fs::read_to_string(&out_path).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    assert!(rows[0].starts_with("a\tmate\t3"), "{text}");
    assert!(rows[1].starts_with("b\tmate\t27"), "{text}");
    assert!(!text.contains("never"), "{text}");
    assert!(rows.last().unwrap().contains("interrupted"), "{text}");
    std::fs::remove_file(file).unwrap();
    std::fs::remove_file(out_path).unwrap();
}

/// `solve --output kif|ki2|csa` prints a record that the project's readers take back to the
/// position and the solution `--json` reports; `--probe` adds what the table knows.
#[test]
fn records_and_probe_from_the_command_line() {
    use kyozume::shogi::record::{read_csa, read_ki2, read_kif};
    let sfen = sfen_of("fm3_gold_only_1");
    let root = Position::from_sfen(&sfen).unwrap();
    let (code, out, _) = run(&["solve", "--json", &sfen]);
    assert_eq!(code, 0);
    let report = json(out.trim());
    let moves = replay(&root, report["moves"].as_array().unwrap());
    for (format, read) in [
        ("kif", read_kif as fn(&str) -> _),
        ("ki2", read_ki2),
        ("csa", read_csa),
    ] {
        let (code, out, err) = run(&["solve", "--output", format, &sfen]);
        assert_eq!(code, 0, "{err}");
        let (pos, read) = read(&out).unwrap_or_else(|e| panic!("{format}: {e}\n{out}"));
        assert_eq!(pos.key(), root.key(), "{format}");
        assert_eq!(read, moves, "{format}");
    }
    // The probe: after the first two moves, the attacker is to move with 9 plies left.
    let first_two: Vec<&str> = report["moves"].as_array().unwrap()[..2]
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    let (code, out, err) = run(&["solve", "--probe", &first_two.join(" "), &sfen]);
    assert_eq!(code, 0, "{err}");
    let probe: Vec<&str> = out.lines().filter(|l| l.starts_with("probe: ")).collect();
    assert!(probe[0].ends_with("(attacker to move)"), "{probe:?}");
    assert!(
        probe
            .iter()
            .any(|l| l.starts_with("probe: shortest helpmate 9 plies: ")),
        "{probe:?}"
    );
    let (code, _, err) = run(&["solve", "--probe", "9z9y", &sfen]);
    assert_eq!(code, 2);
    assert!(err.contains("--probe"), "{err}");
}

/// `--batch --jobs N` solves problems at once and still writes them in input order, with the
/// same verdicts as one at a time.
#[test]
fn batch_jobs_keep_input_order_and_answers() {
    let names: Vec<String> = helpmates()
        .into_iter()
        .filter(|p| p.plies <= 40)
        .take(12)
        .map(|p| p.name)
        .collect();
    let mut lines: Vec<String> = names
        .iter()
        .map(|n| format!("{n}\t{}", sfen_of(n)))
        .collect();
    lines.insert(3, "broken\tnot an sfen".to_string());
    let (_, nomate) = nomates().into_iter().next().unwrap();
    lines.insert(7, format!("none\t{nomate}"));
    let file = write_batch("jobs", &lines);
    let verdicts = |jobs: &str| {
        let (code, out, err) = run(&[
            "solve",
            "--json",
            "--threads",
            "1",
            "--jobs",
            jobs,
            "--batch",
            file.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        out.lines()
            .map(json)
            .map(|o| {
                (
                    o["name"].clone(),
                    o["status"].clone(),
                    o["plies"].clone(),
                    o["solutions"].clone(),
                    o["moves"].clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    let one = verdicts("1");
    let three = verdicts("3");
    assert_eq!(one.len(), lines.len() + 1);
    assert_eq!(one[3].0, "broken");
    assert_eq!(one[7].1, "nomate");
    // The summary line differs only in time, which is not compared here.
    assert_eq!(three[..lines.len()], one[..lines.len()]);
    let (code, _, err) = run(&["solve", "--jobs", "2", &sfen_of("fmrs_test_solve_15")]);
    assert_ne!(code, 0, "--jobs without --batch is refused: {err}");
    std::fs::remove_file(file).unwrap();
}

#[test]
fn levels_are_logged_on_stderr_as_the_breadth_first_pass_goes() {
    // 1,965 plies: the breadth-first pass solves it in about two seconds.
    let sfen = sfen_of("fmrs_morishige_1965");
    let (code, out, err) = run(&[
        "solve",
        "--hash",
        "256",
        "--threads",
        "1",
        "--solutions",
        "1",
        "--levels",
        "--json",
        &sfen,
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(out.trim())["plies"], 1965);
    let mut lines = err.lines();
    let gaps = "gap0\tgap1\tgap2\tgap3\tgap5\tgap9\tgap17\tgap33\tgap65\tgap129\tgap257\tgap513\tgap1025\tgap2049\tgap4097\tgap8193";
    assert_eq!(
        lines.next(),
        Some(format!("level\tplies\tpositions\tkeys\tkeys_MB\tlinks_MB\ttotal_MB\tseconds\tdisk_MB\tnodes\tchecks\t{gaps}\tghosts\tcheckpoint_s\tcheckpoint_MB\texchanged_MB").as_str())
    );
    let rows: Vec<Vec<f64>> = lines
        .map(|l| l.split('\t').map(|f| f.parse().unwrap()).collect())
        .collect();
    // Every level from the first to the one before the mate, in order, the keys only growing.
    assert_eq!(rows.len(), 982);
    let mut met_again = 0.0;
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row.len(), 11 + 16 + 4);
        assert_eq!(row[8], 0.0, "nothing on disk with room in memory");
        assert_eq!(row[0] as usize, i + 1);
        assert_eq!(row[1] as usize, 2 * (i + 1));
        assert!(row[2] >= 1.0, "an empty level would have proven no mate");
        assert!(row[10] >= row[2], "every position kept has a check");
        // The duplicates are a sample's counts, scaled up.
        assert!(row[11..27].iter().all(|&g| g % 1024.0 == 0.0));
        met_again += row[11..27].iter().sum::<f64>();
        assert_eq!(row[27], 0.0, "no key let go of with memory to spare");
        assert_eq!(row[28..30], [0.0, 0.0], "no checkpoints asked for");
        assert_eq!(row[30], 0.0, "one process exchanges nothing");
        if i > 0 {
            assert!(row[3] >= rows[i - 1][3] + row[2]);
            assert!(
                row[9] > rows[i - 1][9] + rows[i - 1][10],
                "checks and evasions played"
            );
            assert!(row[7] >= rows[i - 1][7]);
        }
    }
    // Positions are met again (1965 meets about as many again as it keeps).
    let kept = rows.last().unwrap()[3];
    assert!(
        met_again > kept / 4.0 && met_again < 4.0 * kept,
        "{met_again} of {kept}"
    );
}

#[test]
fn distributed_refuses_what_it_cannot_do() {
    let sfen = "4k4/9/4P4/9/9/9/9/9/4K4 b G 1";
    // Problems are taken one at a time by all the ranks together.
    let (code, out, err) = run(&["solve", "--distributed", "--jobs", "2", sfen]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty() && err.contains("--jobs"), "{err}");
    // This build has no MPI (`cargo test` builds without the feature).
    if !cfg!(feature = "mpi") {
        let (code, out, err) = run(&["solve", "--distributed", sfen]);
        assert_eq!(code, 2, "{err}");
        assert!(out.is_empty() && err.contains("built without MPI"), "{err}");
    }
}
