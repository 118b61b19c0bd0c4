//! The stated length through the front ends: `kyozume solve --max-plies`, `--plies` and its
//! verdicts (完全, 余詰, 早詰, 不詰), a length read from a KIF header, a Fairy-Mate-style first
//! line, a batch column or `--rules`, and `MaxPlies` in a piped USI script. The answers are held
//! to the published lengths and counts of tests/data/helpmates.tsv and to Fairy Mate's
//! "none within N" (tests/data/fairy_mate_bounded.tsv).

mod common;

use common::helpmates;
use kyozume::shogi::kif::to_bod;
use kyozume::shogi::Position;
use std::process::Command;
use std::time::Duration;

fn run(args: &[&str]) -> (i32, String, String) {
    let mut all: Vec<&str> = args.to_vec();
    if args.first() == Some(&"solve") {
        all.splice(1..1, ["--hash", "16", "--threads", "1"]);
    }
    let out = Command::new(env!("CARGO_BIN_EXE_kyozume"))
        .args(&all)
        .output()
        .expect("run kyozume");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(line: &str) -> serde_json::Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

/// A published problem of `plies` plies whose count is `solutions` ("1", "2+").
fn published(plies: u32, solutions: &str) -> (String, String) {
    let p = helpmates()
        .into_iter()
        .find(|p| p.plies == plies && p.solutions == solutions)
        .unwrap_or_else(|| panic!("no {plies}-ply row with {solutions} solutions"));
    (p.name, p.sfen)
}

/// The rows of tests/data/fairy_mate_bounded.tsv: rules, name, SFEN, bound, Fairy Mate's
/// answer, its shortest length, source.
fn fairy_mate_rows() -> Vec<Vec<String>> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/fairy_mate_bounded.tsv"
    );
    std::fs::read_to_string(path)
        .expect("fairy_mate_bounded.tsv")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("rules\t") && !l.trim().is_empty())
        .map(|l| l.split('\t').map(String::from).collect())
        .collect()
}

/// Problems Fairy Mate proved to have no solution within a bound: (rules, SFEN, bound).
fn fairy_mate_none_within() -> Vec<(String, String, u32)> {
    fairy_mate_rows()
        .into_iter()
        .filter(|f| f[4] == "nomate")
        .map(|f| (f[0].clone(), f[2].clone(), f[3].parse().unwrap()))
        .collect()
}

#[test]
fn max_plies_proves_none_within_the_bound() {
    let rows = fairy_mate_none_within();
    assert!(rows.len() >= 15, "{}", rows.len());
    for (rules, sfen, bound) in rows.iter().step_by(3) {
        let bound_text = bound.to_string();
        let (code, out, err) = run(&[
            "solve",
            "--json",
            "--rules",
            rules,
            "--max-plies",
            &bound_text,
            sfen,
        ]);
        let v = json(out.trim());
        assert_eq!(code, 1, "{rules} {sfen}: {out}{err}");
        assert_eq!(v["status"], "nomate", "{out}");
        assert_eq!(v["max_plies"], *bound, "{out}");
        assert!(v.get("verdict").is_none(), "{out}");
        // The human report names the bound.
        let (code, out, _) = run(&["solve", "--rules", rules, "--max-plies", &bound_text, sfen]);
        assert_eq!(code, 1);
        assert!(out.contains(&format!("within {bound} plies")), "{out}");
    }
    // 0 is no bound; a bound past the solution changes nothing.
    let (_, sfen) = published(13, "1");
    for bound in ["0", "13", "99"] {
        let (code, out, _) = run(&["solve", "--json", "--max-plies", bound, &sfen]);
        let v = json(out.trim());
        assert_eq!((code, &v["plies"]), (0, &serde_json::json!(13)), "{out}");
        assert_eq!(v["unique"], true);
    }
    let (code, out, _) = run(&["solve", "--json", "--max-plies", "11", &sfen]);
    assert_eq!(code, 1);
    assert_eq!(json(out.trim())["max_plies"], 11);
}

/// Problems with Fairy Mate's verdict against a stated length: (rules, SFEN, length, verdict,
/// Fairy Mate's shortest length).
fn fairy_mate_verdicts() -> Vec<(String, String, u32, String, u32)> {
    fairy_mate_rows()
        .into_iter()
        .filter(|f| f[4] != "nomate")
        .map(|f| {
            let (length, plies) = (f[3].parse().unwrap(), f[5].parse().unwrap());
            (f[0].clone(), f[2].clone(), length, f[4].clone(), plies)
        })
        .collect()
}

#[test]
fn verdicts_agree_with_fairy_mate() {
    let rows = fairy_mate_verdicts();
    assert!(rows.len() >= 15, "{}", rows.len());
    let mut seen = std::collections::BTreeSet::new();
    for (rules, sfen, stated, verdict, plies) in rows {
        let stated_text = stated.to_string();
        let (code, out, err) = run(&[
            "solve",
            "--json",
            "--rules",
            &rules,
            "--plies",
            &stated_text,
            &sfen,
        ]);
        let v = json(out.trim());
        assert_eq!(code, 0, "{rules} {sfen}: {out}{err}");
        assert_eq!(
            v["verdict"],
            verdict.as_str(),
            "{rules} {sfen} {stated}: {out}"
        );
        assert_eq!(v["plies"], plies, "{rules} {sfen} {stated}: {out}");
        seen.insert(verdict);
    }
    // Sound, cooked and short problems among them.
    assert_eq!(seen.len(), 3, "{seen:?}");
}

#[test]
fn the_stated_length_gets_a_verdict() {
    let (name, sound) = published(13, "1");
    let (cooked_name, cooked) = published(5, "2+");
    let verdict = |args: &[&str]| {
        let mut all = vec!["solve", "--json"];
        all.extend_from_slice(args);
        let (code, out, err) = run(&all);
        let v = json(out.trim());
        (code, v, err)
    };
    let (code, v, _) = verdict(&["--plies", "13", &sound]);
    assert_eq!(
        (code, v["verdict"].as_str()),
        (0, Some("sound")),
        "{name}: {v}"
    );
    assert_eq!(v["max_plies"], 13);
    let (code, v, _) = verdict(&["--plies", "15", &sound]);
    assert_eq!((code, v["verdict"].as_str()), (0, Some("short")), "{v}");
    assert_eq!(v["plies"], 13, "the shorter solution is given");
    let (code, v, _) = verdict(&["--plies", "11", &sound]);
    assert_eq!((code, v["verdict"].as_str()), (1, Some("nomate")), "{v}");
    assert_eq!(v["status"], "nomate");
    let (code, v, _) = verdict(&["--plies", "5", &cooked]);
    assert_eq!(
        (code, v["verdict"].as_str()),
        (0, Some("cooked")),
        "{cooked_name}: {v}"
    );
    assert!(v["solutions"].as_u64().unwrap() >= 2);
    // --plies counts at least two solutions, whatever --solutions says.
    let (_, v, _) = verdict(&["--plies", "5", "--solutions", "1", &cooked]);
    assert_eq!(v["verdict"], "cooked", "{v}");
    // The human report says it in the composers' words.
    let (_, out, _) = run(&["solve", "--plies", "13", &sound]);
    assert!(
        out.contains("Stated length 13 plies: 完全 (sound)"),
        "{out}"
    );
    let (_, out, _) = run(&["solve", "--plies", "15", &sound]);
    assert!(out.contains("早詰 (short)"), "{out}");
    let (_, out, _) = run(&["solve", "--plies", "11", &sound]);
    assert!(out.contains("不詰 (nomate)"), "{out}");
    let (_, out, _) = run(&["solve", "--plies", "5", &cooked]);
    assert!(out.contains("余詰 (cooked)"), "{out}");

    // A length that cannot be the stipulation's: an error on stderr, nothing searched.
    let (code, out, err) = run(&["solve", "--plies", "12", &sound]);
    assert_eq!(code, 2);
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("odd number of plies"), "{err}");
    let (code, _, err) = run(&["solve", "--rules", "協力自玉詰", "--plies", "9", &sound]);
    assert_eq!(code, 2);
    assert!(err.contains("even number of plies"), "{err}");
    // --plies and --max-plies are two answers to one question: not both.
    let (code, _, err) = run(&["solve", "--plies", "13", "--max-plies", "13", &sound]);
    assert_eq!(code, 2, "{err}");
    // The length after the rules, as composers write them.
    let (code, v, _) = verdict(&["--rules", "協力詰 13手", &sound]);
    assert_eq!((code, v["verdict"].as_str()), (0, Some("sound")), "{v}");
    let (code, v, _) = verdict(&["--rules", "ばか詰 十一手", &sound]);
    assert_eq!((code, v["verdict"].as_str()), (1, Some("nomate")), "{v}");
}

#[test]
fn a_file_states_its_length_and_the_command_line_stands_over_it() {
    let (_, sfen) = published(13, "1");
    let bod = to_bod(&Position::from_sfen(&sfen).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: String| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let kif = write(
        "p.kif",
        format!("作品形式：協力詰\n手数＝15\n手合割：平手\n{bod}"),
    );
    let fm = write("p.bod", format!("協力詰 13手\n{bod}"));
    let verdict = |args: &[&str]| {
        let mut all = vec!["solve", "--json"];
        all.extend_from_slice(args);
        let (_, out, _) = run(&all);
        json(out.trim())
    };
    assert_eq!(verdict(&[&kif])["verdict"], "short");
    assert_eq!(verdict(&[&fm])["verdict"], "sound");
    assert_eq!(verdict(&["--plies", "13", &kif])["verdict"], "sound");
    assert_eq!(verdict(&["--plies", "11", &fm])["verdict"], "nomate");
    // --max-plies 0 lifts the file's bound: no verdict, the shortest.
    let v = verdict(&["--max-plies", "0", &kif]);
    assert!(
        v.get("verdict").is_none() && v.get("max_plies").is_none(),
        "{v}"
    );
    assert_eq!(v["plies"], 13);
    // A file whose length does not fit its stipulation.
    let odd = write("odd.bod", format!("協力自玉詰 13手\n{bod}"));
    let (code, _, err) = run(&["solve", &odd]);
    assert_eq!(code, 2);
    assert!(err.contains("even number of plies"), "{err}");

    // A batch: the length in the stipulation's column or in one of its own; a bare number (the
    // reference data's length column) is not one.
    let (_, five) = published(5, "1");
    let batch = write(
        "b.tsv",
        [
            format!("a\t{sfen}\t協力詰 13手"),
            format!("b\t{sfen}\t\t15手"),
            format!("c\t{sfen}\t11"),
            format!("d\t{five}\t協力詰\t3手"),
            format!("e\t{sfen}\t協力自玉詰 13手"),
        ]
        .join("\n"),
    );
    let (code, out, _) = run(&["solve", "--json", "--batch", &batch]);
    assert_eq!(code, 0, "{out}");
    let reports: Vec<serde_json::Value> = out
        .lines()
        .filter(|l| l.starts_with('{') && l.contains("\"sfen\""))
        .map(json)
        .collect();
    let by_name = |n: &str| {
        reports
            .iter()
            .find(|r| r["name"] == n)
            .unwrap_or_else(|| panic!("{n}: {out}"))
    };
    assert_eq!(by_name("a")["verdict"], "sound");
    assert_eq!(by_name("b")["verdict"], "short");
    assert!(by_name("c").get("verdict").is_none());
    assert_eq!(by_name("c")["plies"], 13);
    assert_eq!(by_name("d")["verdict"], "nomate");
    assert_eq!(by_name("e")["status"], "error");
    // The summary keeps "none within a bound" apart from "no helpmate at all".
    let summary = out
        .lines()
        .find_map(|l| json(l).get("summary").cloned())
        .unwrap_or_else(|| panic!("no summary: {out}"));
    assert_eq!(summary["none_within_bound"], 1, "{summary}");
    assert_eq!(summary["no_helpmate"], 0, "{summary}");
    // The command line's length stands over every line's.
    let (_, out, _) = run(&["solve", "--json", "--plies", "13", "--batch", &batch]);
    assert!(
        out.lines()
            .filter(|l| l.contains("\"name\":\"b\""))
            .all(|l| l.contains("\"verdict\":\"sound\"")),
        "{out}"
    );
}

#[test]
fn max_plies_in_a_piped_usi_script() {
    let (_, thirteen) = published(13, "1");
    let (_, five) = published(5, "1");
    let (_, hs, _) = fairy_mate_none_within()
        .into_iter()
        .find(|(rules, _, bound)| rules == "協力自玉詰" && *bound == 10)
        .expect("an HS# row within 10");
    // (MaxPlies, stipulation, SFEN, what the answer must be).
    let steps: [(&str, &str, &str, &str); 6] = [
        ("10", "HS#", &hs, "nomate within 10"),
        ("0", "H#", &thirteen, "mate 13"),
        ("7", "H#", &thirteen, "nomate within 7"),
        ("7", "H#", &five, "mate 5"),
        ("0", "H#", &thirteen, "mate 13"),
        ("13", "H#", &thirteen, "mate 13"),
    ];
    let mut script =
        String::from("usi\nsetoption name USI_Hash value 16\nsetoption name Threads value 1\n");
    // A bad value is refused and changes nothing.
    script += "setoption name MaxPlies value lots\n";
    for (max, stipulation, sfen, _) in steps {
        script += &format!(
            "setoption name MaxPlies value {max}\nsetoption name Stipulation value {stipulation}\nisready\nposition sfen {sfen}\ngo mate infinite\n"
        );
    }
    // (No `quit`: it would stop the search under way; the end of input lets them finish.)
    let (lines, status, _) = common::run_script(&script, Duration::from_secs(120));
    assert!(status.success());
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("option name MaxPlies type spin default 0 min 0 max 65535")),
        "{lines:#?}"
    );
    let errors = lines
        .iter()
        .filter(|l| l.starts_with("info string error"))
        .count();
    assert_eq!(errors, 1, "{lines:#?}");
    let answers: Vec<(String, String)> = {
        let mut out = Vec::new();
        let mut said = String::new();
        for l in &lines {
            if l.starts_with("info string proven") {
                said = l.clone();
            } else if let Some(moves) = l.strip_prefix("checkmate ") {
                out.push((moves.to_string(), std::mem::take(&mut said)));
            }
        }
        out
    };
    assert_eq!(answers.len(), steps.len(), "{lines:#?}");
    for ((_, _, sfen, want), (moves, said)) in steps.iter().zip(&answers) {
        match want.split_whitespace().collect::<Vec<_>>()[..] {
            ["nomate", "within", n] => {
                assert_eq!(moves, "nomate", "{sfen}");
                assert!(said.contains(&format!("within {n} plies")), "{said}");
            }
            ["mate", n] => {
                let n: usize = n.parse().unwrap();
                assert_eq!(moves.split_whitespace().count(), n, "{sfen}: {moves}");
            }
            _ => unreachable!(),
        }
    }
}
