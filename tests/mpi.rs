//! The distributed pass through MPI (`--features mpi`; `.ci/run` installs OpenMPI and runs
//! these): `mpirun -np 2` (two threads a rank) and `-np 3` (one) of `kyozume solve
//! --distributed` answer every test row up to 120 plies and every no-mate row as one process
//! does (length, count, and the lines when they are all listed), as does `-np 4` on a problem
//! wide enough for levels numbered by ranges, and `--batch` at 2 ranks; and a problem one rank
//! cannot read ends every rank. A run with checkpoints whose ranks are killed (SIGKILL) twice
//! resumes to the same answer.

#![cfg(feature = "mpi")]

mod common;

use common::{helpmate_sfen, rows_up_to};
use std::collections::BTreeSet;
use std::process::{Command, Output};

fn kyozume() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kyozume"))
}

/// `mpirun -np ranks kyozume args...` (as root too: OpenMPI refuses root unless told).
fn mpirun(ranks: usize, args: &[&str]) -> Output {
    Command::new("mpirun")
        .args(["--oversubscribe", "-np", &ranks.to_string()])
        .arg(env!("CARGO_BIN_EXE_kyozume"))
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("mpirun (OpenMPI) is installed")
}

/// What a report says: status, plies, the count, and every line it lists.
fn answer(output: &Output) -> (String, String, String, BTreeSet<String>) {
    let text = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "one report: {text}");
    let json: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    let mut listed = BTreeSet::new();
    listed.insert(json["moves"].to_string());
    for line in json["alternatives"].as_array().into_iter().flatten() {
        listed.insert(line.to_string());
    }
    (
        json["status"].to_string(),
        json["plies"].to_string(),
        json["solutions"].to_string(),
        listed,
    )
}

#[test]
fn mpi_ranks_answer_as_one_process() {
    let (rows, _) = rows_up_to(120);
    let args = [
        "solve",
        "--json",
        "--threads",
        "1",
        "--solutions",
        "5",
        "--hash",
        "64",
    ];
    for (name, sfen) in &rows {
        let alone = kyozume().args(args).arg(sfen).output().unwrap();
        let (status, plies, count, listed) = answer(&alone);
        for ranks in [2, 3] {
            let mut distributed_args = args.to_vec();
            // Two ranks of two threads each, three of one.
            if ranks == 2 {
                distributed_args[3] = "2";
            }
            distributed_args.extend(["--distributed", sfen]);
            let output = mpirun(ranks, &distributed_args);
            assert_eq!(
                output.status.code(),
                alone.status.code(),
                "{name} at {ranks}"
            );
            let (d_status, d_plies, d_count, d_listed) = answer(&output);
            let at = format!("{name} at {ranks} ranks");
            assert_eq!(
                (&d_status, &d_plies, &d_count),
                (&status, &plies, &count),
                "{at}"
            );
            // Every line listed when there are fewer than the limit: the same lines.
            if count.parse::<u32>().is_ok_and(|n| n < 5) {
                assert_eq!(d_listed, listed, "{at}");
            }
        }
    }
}

#[test]
fn wide_levels_numbered_by_ranges_answer_as_one_process() {
    // 森茂 1461's levels reach 29,272 positions: at 4 ranks those from 65,536 / 3 on are
    // numbered by ranges of their parents (`RANGES_FROM`), the others by gathering.
    let sfen = helpmate_sfen("fmrs_morishige_1461");
    let args = ["solve", "--json", "--threads", "1", "--solutions", "2"];
    let alone = kyozume()
        .args(args)
        .args(["--hash", "1024", &sfen])
        .output()
        .unwrap();
    let output = mpirun(
        4,
        &[
            &args[..],
            &["--hash", "256", "--levels", "--distributed", &sfen],
        ]
        .concat(),
    );
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(answer(&output), answer(&alone));
    let levels = String::from_utf8_lossy(&output.stderr);
    let widest = (levels.lines().skip(1))
        .filter_map(|l| l.split('\t').nth(2)?.parse::<u64>().ok())
        .max()
        .unwrap_or(0);
    assert!(widest * 3 >= 1 << 16, "widest level {widest}");
}

/// Each report line of a batch (status, plies, count, line, alternatives; not the times),
/// and the summary's counts.
fn batch_answers(output: &Output) -> Vec<String> {
    let text = String::from_utf8_lossy(&output.stdout);
    (text.lines())
        .map(|line| {
            let json: serde_json::Value = serde_json::from_str(line).unwrap();
            let fields = [
                "name",
                "status",
                "plies",
                "solutions",
                "moves",
                "alternatives",
            ];
            match json.get("summary") {
                Some(summary) => format!(
                    "{} {} {} {}",
                    summary["problems"], summary["solved"], summary["cooked"], summary["errors"]
                ),
                None => fields.map(|f| json[f].to_string()).join(" "),
            }
        })
        .collect()
}

#[test]
fn a_distributed_batch_answers_as_one_process() {
    // Every fifth row up to 120 plies and a line that is no problem, at 2 ranks.
    let (rows, _) = rows_up_to(120);
    let mut batch = tempfile::NamedTempFile::new().unwrap();
    use std::io::Write;
    for (name, sfen) in rows.iter().step_by(5) {
        writeln!(batch, "{name}\t{sfen}").unwrap();
    }
    writeln!(batch, "broken\tnot a position").unwrap();
    let file = batch.path().to_str().unwrap();
    let args = [
        "solve",
        "--json",
        "--threads",
        "1",
        "--hash",
        "64",
        "--batch",
        file,
    ];
    let alone = kyozume().args(args).output().unwrap();
    let output = mpirun(2, &[&args[..], &["--distributed"]].concat());
    assert_eq!(output.status.code(), alone.status.code());
    let answers = batch_answers(&output);
    assert_eq!(answers, batch_answers(&alone));
    assert!(answers.len() >= 10, "{answers:?}");
    // A file no rank can read: every rank ends, with exit status 2.
    let missing = mpirun(
        2,
        &[
            "solve",
            "--distributed",
            "--batch",
            "/nonexistent/problems.tsv",
        ],
    );
    assert_eq!(missing.status.code(), Some(2));
    assert!(missing.stdout.is_empty());
}

#[test]
fn a_problem_only_rank_zero_can_read_ends_every_rank() {
    // Under mpirun only rank 0 reads stdin: the others find no problem.
    let sfen = "4k4/9/4P4/9/9/9/9/9/4K4 b G 1";
    let output = Command::new("mpirun")
        .args(["--oversubscribe", "-np", "2"])
        .arg(env!("CARGO_BIN_EXE_kyozume"))
        .args(["solve", "--distributed", "-"])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(sfen.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("another rank could not read the problem"),
        "{stderr}"
    );
}

/// The generation of rank `rank`'s checkpoint in `dir` (0: none yet).
fn rank_generation(dir: &std::path::Path, rank: usize) -> u64 {
    let Some(Ok(ranks_dir)) = std::fs::read_dir(dir).ok().and_then(|mut d| d.next()) else {
        return 0;
    };
    std::fs::read_to_string(ranks_dir.path().join(format!("rank-{rank}/manifest.toml")))
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("generation = ").map(str::to_string))
        })
        .and_then(|g| g.trim().parse().ok())
        .unwrap_or(0)
}

/// SIGKILL to every process whose command line holds `marker` (mpirun and its ranks).
fn kill_all_holding(marker: &str) {
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.parse::<u32>().is_err() {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmdline).contains(marker) {
            let _ = Command::new("kill").args(["-9", &name]).status();
        }
    }
}

#[test]
fn ranks_killed_twice_resume_to_the_same_answer() {
    let sfen = helpmate_sfen("fmrs_morishige_1461");
    let args = ["solve", "--json", "--threads", "1", "--hash", "256"];
    let alone = kyozume().args(args).arg(&sfen).output().unwrap();
    let (status, plies, count, listed) = answer(&alone);
    let dir = tempfile::tempdir().unwrap();
    let dir_arg = dir.path().to_str().unwrap();
    // Killed (every process of the job) once both ranks have a checkpoint, and again once the
    // resumed run has written two more.
    for (round, flag) in ["--checkpoint", "--resume"].into_iter().enumerate() {
        let before = rank_generation(dir.path(), 0);
        let mut job = Command::new("mpirun")
            .args(["--oversubscribe", "-np", "2"])
            .arg(env!("CARGO_BIN_EXE_kyozume"))
            .args(args)
            .args([
                "--distributed",
                flag,
                dir_arg,
                "--checkpoint-every",
                "0.005",
            ])
            .arg(&sfen)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        while rank_generation(dir.path(), 0).min(rank_generation(dir.path(), 1)) < before + 2 {
            assert!(
                job.try_wait().unwrap().is_none(),
                "round {round}: the run ended before two checkpoints"
            );
            assert!(start.elapsed() < std::time::Duration::from_secs(120));
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        kill_all_holding(dir_arg);
        job.wait().unwrap();
    }
    let resumed = mpirun(
        2,
        &[&args[..], &["--distributed", "--resume", dir_arg, &sfen]].concat(),
    );
    assert_eq!(
        resumed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert_eq!(answer(&resumed), (status, plies, count, listed));
    // Answered: every rank's checkpoint gone, and the ranks' directory with them.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
