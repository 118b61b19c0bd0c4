//! `kyozume bench`: one run listed problem by problem, and thread counts compared over
//! alternated rounds.

use std::process::Command;

fn bench(args: &[&str]) -> (i32, String, String) {
    // A small table: these problems need little, and the default 1 GB would be zeroed first.
    let out = Command::new(env!("CARGO_BIN_EXE_kyozume"))
        .arg("bench")
        .args(["--hash", "16"])
        .args(args)
        .output()
        .expect("run kyozume bench");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn one_run_lists_each_problem_and_a_total() {
    let (code, out, err) = bench(&["--filter", "gold_only_5", "--filter", "gold_only_7"]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("fm3_")).collect();
    assert_eq!(rows.len(), 2, "{out}");
    for row in rows {
        let f: Vec<&str> = row.split_whitespace().collect();
        // plies = found, at one thread.
        assert_eq!(f[1], f[2], "{row}");
        assert_eq!(f[4], "1", "{row}");
    }
    assert!(
        out.lines().any(|l| l.starts_with("total: solved 2/2")),
        "{out}"
    );
}

#[test]
fn thread_counts_alternate_and_are_compared() {
    let (code, out, err) = bench(&[
        "--filter",
        "gold_only_5",
        "--threads",
        "1,2",
        "--rounds",
        "3",
    ]);
    assert_eq!(code, 0, "{err}");
    // Each round a line for each count, in the order given (the runs themselves go problem by
    // problem, the counts' order reversed every other round).
    let rounds: Vec<(&str, &str)> = out
        .lines()
        .filter(|l| l.starts_with("round "))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[1], f[3].trim_end_matches(':'))
        })
        .collect();
    assert_eq!(
        rounds,
        [
            ("1/3", "1"),
            ("1/3", "2"),
            ("2/3", "1"),
            ("2/3", "2"),
            ("3/3", "1"),
            ("3/3", "2")
        ],
        "{out}"
    );
    assert!(
        out.lines()
            .filter(|l| l.starts_with("round "))
            .all(|l| l.contains("solved 1/1")),
        "{out}"
    );
    let header = out
        .lines()
        .find(|l| l.starts_with("problem"))
        .expect("a table");
    assert!(
        header.contains("1T (s)") && header.contains("2T (s)") && header.contains("speed-up 2T")
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("slower with more threads (median over 1.15x")),
        "{out}"
    );
    for name in ["fm3_gold_only_5", "total"] {
        let row = out
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no row {name}: {out}"));
        // Two median times, then the median speed-up with its range: "x (low-high)", where
        // low <= x <= high.
        let f: Vec<&str> = row.split_whitespace().collect();
        let n = f.len();
        let speedup: f64 = f[n - 2].parse().unwrap();
        let range: Vec<f64> = f[n - 1]
            .trim_matches(|c| c == '(' || c == ')')
            .split('-')
            .map(|x| x.parse().unwrap())
            .collect();
        assert!(range[0] <= speedup && speedup <= range[1], "{row}");
        assert!(
            f[n - 4].parse::<f64>().is_ok() && f[n - 3].parse::<f64>().is_ok(),
            "{row}"
        );
    }
}

#[test]
fn a_pair_of_one_thread_solves_gives_the_ceiling_and_the_efficiency() {
    let (code, out, err) = bench(&[
        "--filter",
        "gold_only_7",
        "--threads",
        "1,2",
        "--rounds",
        "1",
        "--pair",
    ]);
    assert_eq!(code, 0, "{err}");
    let pairs: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("two one-thread solves at once"))
        .collect();
    assert_eq!(pairs.len(), 1, "{out}");
    assert!(pairs.iter().all(|l| l.contains("solved 1/1")), "{out}");
    let header = out.lines().find(|l| l.starts_with("problem")).unwrap();
    assert!(
        header.contains("pair (s)") && header.contains("ceiling") && header.contains("efficiency"),
        "{header}"
    );
    let row = out
        .lines()
        .find(|l| l.starts_with("fm3_gold_only_7"))
        .unwrap();
    // 1T, 2T, pair, speed-up (range), ceiling (range), efficiency.
    let f: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(f.len(), 10, "{row}");
    let number = |i: usize| f[i].parse::<f64>().unwrap_or_else(|_| panic!("{row}"));
    let (one, two, pair) = (number(2), number(3), number(4));
    assert!(one > 0.0 && two > 0.0 && pair > 0.0, "{row}");
    let (speedup, ceiling, efficiency) = (number(5), number(7), number(9));
    // One round: the efficiency is the speed-up over the ceiling (each printed to 0.01).
    assert!(speedup > 0.0 && ceiling > 0.0, "{row}");
    let expected = speedup / ceiling;
    assert!(
        (efficiency - expected).abs() <= 0.01 + expected * (0.006 / speedup + 0.006 / ceiling),
        "{row}"
    );
}

#[test]
fn bad_thread_counts_and_clashing_options_are_refused() {
    for args in [
        &["--threads", "1,0"][..],
        &["--threads", "1,x"],
        &["--rounds", "0"],
        &["--checks", "--rounds", "2"],
        &["--threads", "2", "--pair"],
        &["--threads", "1,4", "--pair"],
        &["--filter", "no_such_problem"],
    ] {
        let (code, out, err) = bench(args);
        assert_eq!(code, 2, "{args:?}: {out}");
        assert!(!err.trim().is_empty(), "{args:?}");
        assert!(!out.contains("round "), "{args:?}: {out}");
    }
}
