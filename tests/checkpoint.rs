//! Checkpoints of the breadth-first pass: a run cut off at any level and resumed gives the
//! same length, count and lines as an unbroken one (through the library, also with the key
//! stores for short memory forced on, and through the
//! command line killed with SIGKILL twice); a damaged, foreign or missing checkpoint is refused
//! with a clear error.

mod common;

use common::{helpmates, nomates};
use kyozume::search::{
    verify_helpmate, CheckpointStart, Checkpointing, DiskBudget, DiskError, Forgetting, Limits,
    Outcome, PassTuning, SearchError, SearchResult, Solutions, Solver, Strategy,
};
use kyozume::shogi::Position;
use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

fn solve(hash_mb: usize, sfen: &str, limits: &Limits) -> Result<SearchResult, SearchError> {
    let pos = Position::from_sfen(sfen).unwrap();
    let mut solver = Solver::new(hash_mb).unwrap();
    let stop = AtomicBool::new(false);
    kyozume::search::with_search_stack(|| solver.solve(&pos, limits, &stop, &mut |_| {}))
}

fn answer(result: &SearchResult) -> (Outcome, Option<Solutions>) {
    (result.outcome.clone(), result.solutions.clone())
}

fn checkpoints(dir: &Path, start: CheckpointStart) -> Option<Checkpointing> {
    Some(Checkpointing {
        dir: dir.to_path_buf(),
        every: Duration::ZERO,
        start,
    })
}

fn disk(dir: &Path) -> DiskBudget {
    DiskBudget {
        dir: Some(dir.to_path_buf()),
        cap_bytes: 1 << 30,
        always: false,
    }
}

/// The problems' checkpoint directories under `dir`.
fn problem_dirs(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect()
}

/// The rows of up to 120 plies and the no-mate rows.
fn rows() -> Vec<(String, String, u32)> {
    let mut rows: Vec<(String, String, u32)> = helpmates()
        .into_iter()
        .filter(|p| p.plies <= 120)
        .map(|p| (p.name, p.sfen, p.plies))
        .collect();
    rows.extend(nomates().into_iter().map(|(n, s)| (n, s, 0)));
    rows
}

#[test]
fn a_run_cut_off_at_a_random_level_resumes_to_the_same_answer() {
    let mut random = rand_chacha::ChaCha8Rng::seed_from_u64(42);
    let rows = rows();
    assert!(rows.len() >= 100, "{} rows", rows.len());
    let (mut resumed, mut cut_deep) = (0, 0);
    for (i, (name, sfen, plies)) in rows.iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        // Every other row with two threads, each level through the threaded expansion.
        let threads = 1 + i % 2;
        let limits = Limits {
            strategy: Strategy::BreadthFirst,
            solution_limit: 5,
            threads,
            tuning: PassTuning::threads_on_every_level().into(),
            disk: disk(dir.path()),
            ..Default::default()
        };
        let unbroken = solve(64, sfen, &limits).unwrap();
        // Cut off where a level of the pass would pass a random length (a mate is found at a
        // level boundary; no-mate rows within the first 40 plies).
        let longest = if *plies > 0 {
            plies.saturating_sub(2)
        } else {
            40
        };
        let cut = random.random_range(1..=longest.max(1)) | 1;
        // Every third row with the stores for short memory forced on, before and after the
        // cut: keys frozen after every level, all but every fourth level's let go of two
        // levels later.
        let stores = Limits {
            tuning: limits.tuning.clone().with_pass(match i % 3 {
                2 => PassTuning {
                    freeze_every_level: true,
                    forgetting: Forgetting {
                        kept_for: 2,
                        keep_every: 4,
                    },
                    ..limits.tuning.pass.clone()
                },
                _ => limits.tuning.pass.clone(),
            }),
            ..limits.clone()
        };
        let cut_off = Limits {
            max_plies: Some(cut),
            checkpoint: checkpoints(dir.path(), CheckpointStart::Fresh),
            ..stores.clone()
        };
        let first = solve(64, sfen, &cut_off).unwrap();
        if !matches!(first.outcome, Outcome::NoMateWithin { .. }) {
            // The pass ended before the cut (no mate at all, early): nothing to resume, and
            // the checkpoint is gone with the answer.
            assert_eq!(answer(&first), answer(&unbroken), "{name}");
            assert!(problem_dirs(dir.path()).is_empty(), "{name}");
            continue;
        }
        assert_eq!(
            problem_dirs(dir.path()).len(),
            1,
            "{name}: a checkpoint is left"
        );
        // Resumed, the key set comes back frozen (its compact form) and grows from there;
        // every other row sends each new level's links straight to the checkpoint's file.
        let resume = Limits {
            checkpoint: checkpoints(dir.path(), CheckpointStart::Resume),
            disk: DiskBudget {
                always: i % 4 < 2,
                ..disk(dir.path())
            },
            ..stores
        };
        let again = solve(64, sfen, &resume).unwrap();
        assert_eq!(
            answer(&again),
            answer(&unbroken),
            "{name} cut at {cut} plies"
        );
        if let Outcome::Mate(line) = &again.outcome {
            verify_helpmate(&Position::from_sfen(sfen).unwrap(), line).unwrap();
        }
        assert!(
            problem_dirs(dir.path()).is_empty(),
            "{name}: answered, removed"
        );
        resumed += 1;
        cut_deep += usize::from(cut >= 21);
    }
    assert!(resumed >= 60, "{resumed} rows resumed");
    assert!(cut_deep >= 20, "{cut_deep} rows cut after 20 plies");
}

/// A checkpoint of `sfen` cut off at `cut` plies, in `dir`; its problem's directory.
fn checkpoint_of(dir: &Path, sfen: &str, cut: u32) -> PathBuf {
    let limits = Limits {
        strategy: Strategy::BreadthFirst,
        solution_limit: 2,
        max_plies: Some(cut),
        disk: disk(dir),
        checkpoint: checkpoints(dir, CheckpointStart::Fresh),
        ..Default::default()
    };
    let before = problem_dirs(dir);
    let result = solve(64, sfen, &limits).unwrap();
    assert_eq!(result.outcome, Outcome::NoMateWithin { max_plies: cut });
    let mut after = problem_dirs(dir);
    after.retain(|d| !before.contains(d));
    assert_eq!(after.len(), 1);
    after.pop().unwrap()
}

fn refusal(result: Result<SearchResult, SearchError>) -> String {
    match result {
        Err(SearchError::Disk(e @ DiskError::CheckpointRefused { .. })) => e.to_string(),
        Err(e) => panic!("another error: {e}"),
        Ok(r) => panic!("not refused: {:?}", r.outcome),
    }
}

#[test]
fn a_damaged_foreign_or_missing_checkpoint_is_refused() {
    let rows = helpmates();
    let sfen_of = |name: &str| rows.iter().find(|p| p.name == name).unwrap().sfen.clone();
    let a = sfen_of("fmrs_morishige_1965");
    let b = sfen_of("fmrs_morishige_1461");
    let dir = tempfile::tempdir().unwrap();
    let resume = |sfen: &str, start| {
        let limits = Limits {
            strategy: Strategy::BreadthFirst,
            solution_limit: 2,
            max_plies: Some(301),
            disk: disk(dir.path()),
            checkpoint: checkpoints(dir.path(), start),
            ..Default::default()
        };
        solve(64, sfen, &limits)
    };
    // None to resume.
    let error = refusal(resume(&a, CheckpointStart::Resume));
    assert!(error.contains("no checkpoint of this problem"), "{error}");
    let of_a = checkpoint_of(dir.path(), &a, 201);
    let of_b = checkpoint_of(dir.path(), &b, 101);
    // Starting afresh over one: refused, not overwritten.
    let error = refusal(resume(&a, CheckpointStart::Fresh));
    assert!(error.contains("already holds a checkpoint"), "{error}");
    // A sound one resumes (cut off again further on).
    let result = resume(&a, CheckpointStart::Resume).unwrap();
    assert_eq!(result.outcome, Outcome::NoMateWithin { max_plies: 301 });
    // Another problem's checkpoint in this problem's place.
    let saved_b = dir.path().join("saved");
    std::fs::rename(&of_b, &saved_b).unwrap();
    copy_dir(&of_a, &of_b);
    let error = refusal(resume(&b, CheckpointStart::Resume));
    assert!(error.contains("another problem"), "{error}");
    std::fs::remove_dir_all(&of_b).unwrap();
    std::fs::rename(&saved_b, &of_b).unwrap();
    // A damaged key file, a damaged level file, a links file cut short, a damaged manifest.
    let generation_file = |dir: &Path, stem: &str| {
        problem_dirs(dir)
            .into_iter()
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(stem))
            .unwrap()
    };
    for (stem, damage) in [
        ("keys.", Damage::FlipByte(100)),
        ("level.", Damage::FlipByte(30)),
        ("links", Damage::Truncate),
        ("manifest.toml", Damage::FlipByte(3)),
    ] {
        let saved = dir.path().join("saved");
        copy_dir(&of_b, &saved);
        let file = generation_file(&of_b, stem);
        damage.apply(&file);
        let error = refusal(resume(&b, CheckpointStart::Resume));
        assert!(
            error.contains("damaged") || error.contains("shorter"),
            "{stem}: {error}"
        );
        std::fs::remove_dir_all(&of_b).unwrap();
        std::fs::rename(&saved, &of_b).unwrap();
    }
    // Undamaged, it still resumes.
    let result = resume(&b, CheckpointStart::Either).unwrap();
    assert_eq!(result.outcome, Outcome::NoMateWithin { max_plies: 301 });
}

enum Damage {
    FlipByte(usize),
    Truncate,
}

impl Damage {
    fn apply(&self, file: &Path) {
        let mut bytes = std::fs::read(file).unwrap();
        match self {
            Damage::FlipByte(at) => bytes[*at] ^= 0x5a,
            Damage::Truncate => bytes.truncate(bytes.len() / 2),
        }
        std::fs::write(file, bytes).unwrap();
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// The JSON answer's length, count and moves.
fn json_answer(stdout: &[u8]) -> (u64, u64, Vec<String>) {
    let text = String::from_utf8_lossy(stdout);
    let value: serde_json::Value = serde_json::from_str(text.trim()).expect("one JSON line");
    let moves = value["moves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_string())
        .collect();
    (
        value["plies"].as_u64().unwrap(),
        value["solutions"].as_u64().unwrap(),
        moves,
    )
}

/// The generation the problem's manifest names (0: none yet).
fn generation(dir: &Path) -> u64 {
    problem_dirs(dir)
        .first()
        .and_then(|d| std::fs::read_to_string(d.join("manifest.toml")).ok())
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("generation = ").map(str::to_string))
        })
        .and_then(|g| g.trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn the_command_line_killed_twice_resumes_to_the_same_answer() {
    let sfen = helpmates()
        .into_iter()
        .find(|p| p.name == "fmrs_morishige_1965")
        .unwrap()
        .sfen;
    let kyozume = env!("CARGO_BIN_EXE_kyozume");
    let common = ["solve", "--json", "--threads", "2", "--solutions", "2"];
    let unbroken = Command::new(kyozume)
        .args(common)
        .arg(&sfen)
        .output()
        .unwrap();
    assert!(unbroken.status.success());
    let dir = tempfile::tempdir().unwrap();
    let dir_arg = dir.path().to_str().unwrap();
    // Killed once a checkpoint is there, and again once the resumed run has written one more.
    for (round, flag) in ["--checkpoint", "--resume"].into_iter().enumerate() {
        let before = generation(dir.path());
        let mut child = Command::new(kyozume)
            .args(common)
            .args([flag, dir_arg, "--checkpoint-every", "0.002"])
            .arg(&sfen)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while generation(dir.path()) < before + 2 {
            assert!(
                child.try_wait().unwrap().is_none(),
                "round {round}: the run ended before two checkpoints"
            );
            assert!(start.elapsed() < Duration::from_secs(120));
            std::thread::sleep(Duration::from_millis(5));
        }
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let resumed = Command::new(kyozume)
        .args(common)
        .args(["--resume", dir_arg])
        .arg(&sfen)
        .output()
        .unwrap();
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert_eq!(json_answer(&resumed.stdout), json_answer(&unbroken.stdout));
    assert!(problem_dirs(dir.path()).is_empty(), "answered: removed");
    // Nothing left to resume now: a clear error and the input status.
    let again = Command::new(kyozume)
        .args(common)
        .args(["--resume", dir_arg])
        .arg(&sfen)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&again.stdout);
    assert_eq!(again.status.code(), Some(2), "{said}");
    assert!(said.contains("no checkpoint of this problem"), "{said}");
}

#[test]
fn the_engine_goes_on_from_a_checkpoint_in_its_checkpoint_dir() {
    use common::Engine;
    let sfen = helpmates()
        .into_iter()
        .find(|p| p.name == "fmrs_morishige_1965")
        .unwrap()
        .sfen;
    let dir = tempfile::tempdir().unwrap();
    let mut engine = Engine::start();
    engine.send("usi");
    let hello = engine.read_until(Duration::from_secs(10), |l| l == "usiok");
    for option in ["CheckpointDir type string", "CheckpointMinutes type spin"] {
        assert!(
            hello.iter().any(|l| l.contains(option)),
            "{option}: {hello:?}"
        );
    }
    engine.send("setoption name CheckpointDir value /no/such/directory");
    let lines = engine.sync();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("info string error: option CheckpointDir"));
    engine.send(&format!(
        "setoption name CheckpointDir value {}",
        dir.path().display()
    ));
    engine.send("setoption name CheckpointMinutes value 0");
    engine.send("setoption name SolutionLimit value 2");
    assert!(engine.sync().is_empty());
    // Cut off by its time: the checkpoint stays.
    let (_, last) = engine.go_mate(&sfen, "400", Duration::from_secs(60));
    assert_eq!(last, "checkmate timeout");
    assert_eq!(problem_dirs(dir.path()).len(), 1);
    let written = generation(dir.path());
    assert!(written > 0);
    // Goes on from it (and says so), to the published answer; the checkpoint is gone with the
    // answer.
    let (lines, last) = engine.go_mate(&sfen, "infinite", Duration::from_secs(120));
    let resumed: Vec<_> = lines
        .iter()
        .filter(|l| l.starts_with("info string resumed from a checkpoint at "))
        .collect();
    assert_eq!(resumed.len(), 1, "{lines:?}");
    assert_eq!(last.split_whitespace().count(), 1 + 1965, "{last}");
    assert!(
        lines.iter().any(|l| l.contains("solutions 1 unique")),
        "{lines:?}"
    );
    assert!(problem_dirs(dir.path()).is_empty());
    // A damaged checkpoint: one error line, no answer made up, and the engine goes on.
    let (_, last) = engine.go_mate(&sfen, "400", Duration::from_secs(60));
    assert_eq!(last, "checkmate timeout");
    let keys = problem_dirs(&problem_dirs(dir.path())[0])
        .into_iter()
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("keys.")
        })
        .unwrap();
    Damage::FlipByte(20).apply(&keys);
    let (lines, last) = engine.go_mate(&sfen, "infinite", Duration::from_secs(60));
    assert_eq!(last, "checkmate timeout");
    let errors: Vec<_> = lines
        .iter()
        .filter(|l| l.starts_with("info string error"))
        .collect();
    assert_eq!(errors.len(), 1, "{lines:?}");
    assert!(
        errors[0].contains("refused") && errors[0].contains("damaged"),
        "{}",
        errors[0]
    );
    assert!(engine.sync().is_empty());
    engine.quit();
}
