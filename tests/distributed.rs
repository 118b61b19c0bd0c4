//! The breadth-first pass shared among ranks (here threads of this process, each with its own
//! solver, talking through `LocalRank`): at 2 ranks of two threads and 3 ranks of one (the
//! levels numbered by ranges of their parents, or by gathering every rank's), every
//! rank gives the same length, count and lines as one process's pass, on every test row up to
//! 120 plies and every no-mate row, and a stop reaches every rank. Each rank's checkpoints: a
//! run cut off at a random level and resumed gives the same answer; ranks that stopped with
//! some of them a generation ahead go on from the one all have; a checkpoint of other ranks,
//! a damaged one or one already there is refused by every rank.

mod common;

use common::{helpmate_sfen, rows_up_to};
use kyozume::search::{
    verify_helpmate, CheckpointStart, Checkpointing, DiskBudget, Limits, LocalRank, Outcome,
    PassTuning, Ranks, SearchResult, Solver, Strategy, Transport,
};
use kyozume::shogi::Position;
use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

fn solve_alone(sfen: &str, limits: &Limits) -> SearchResult {
    let pos = Position::from_sfen(sfen).unwrap();
    let mut solver = Solver::new(64).unwrap();
    let stop = AtomicBool::new(false);
    kyozume::search::with_search_stack(|| solver.solve(&pos, limits, &stop, &mut |_| {})).unwrap()
}

/// Every rank's result, by rank, with `stop` raised for all of them (as a user's stop is); and
/// from rank 0's level log, the plies of the last level the pass made (0 for none), and the
/// positions of all its levels and the bytes the ranks sent one another.
fn solve_among(
    ranks: usize,
    sfen: &str,
    limits: &Limits,
    stop: &AtomicBool,
) -> (Vec<SearchResult>, u32, (usize, u64)) {
    let (results, last, figures) = try_among(ranks, sfen, limits, stop);
    let results = (results.into_iter())
        .map(|r| r.unwrap_or_else(|e| panic!("{sfen}: {e}")))
        .collect();
    (results, last, figures)
}

/// `solve_among`, each rank's error as it said it.
fn try_among(
    ranks: usize,
    sfen: &str,
    limits: &Limits,
    stop: &AtomicBool,
) -> (Vec<Result<SearchResult, String>>, u32, (usize, u64)) {
    let pos = Position::from_sfen(sfen).unwrap();
    let (log, levels) = crossbeam_channel::unbounded();
    let limits = &Limits {
        level_log: Some(log),
        ..limits.clone()
    };
    let results = std::thread::scope(|scope| {
        let handles: Vec<_> = LocalRank::group(ranks)
            .into_iter()
            .map(|rank| {
                let limits = Limits {
                    ranks: Some(Ranks(Arc::new(rank) as Arc<dyn Transport>)),
                    ..limits.clone()
                };
                let pos = &pos;
                std::thread::Builder::new()
                    .stack_size(kyozume::search::SEARCH_STACK_BYTES)
                    .spawn_scoped(scope, move || {
                        let mut solver = Solver::new(64).unwrap();
                        (solver.solve(pos, &limits, stop, &mut |_| {})).map_err(|e| e.to_string())
                    })
                    .unwrap()
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let levels: Vec<_> = levels.try_iter().collect();
    let last = levels.iter().map(|l| l.plies).max().unwrap_or(0);
    let positions = levels.iter().map(|l| l.positions).sum();
    let exchanged = levels.iter().map(|l| l.exchanged).max().unwrap_or(0);
    (results, last, (positions, exchanged))
}

#[test]
fn ranks_give_one_process_lengths_counts_and_lines() {
    let (rows, helpmate_rows) = rows_up_to(120);
    assert!(helpmate_rows >= 100, "{helpmate_rows} rows");
    let stop = AtomicBool::new(false);
    let mut by_the_pass = 0;
    for (i, (name, sfen)) in rows.iter().enumerate() {
        // Counting up to 5 on most rows, the first line only on every fourth.
        let limits = Limits {
            strategy: Strategy::BreadthFirst,
            solution_limit: if i % 4 == 3 { 1 } else { 5 },
            threads: 1,
            ..Default::default()
        };
        let alone = solve_alone(sfen, &limits);
        for ranks in [2, 3] {
            // Two ranks of two threads each, every level of two positions or more cut into
            // shares and numbered by ranges; three ranks of one thread, numbering by ranges
            // on every other row and by gathering on the others (the rows' levels are narrow).
            let limits = match ranks {
                2 => Limits {
                    threads: 2,
                    tuning: limits.tuning.clone().with_pass(PassTuning {
                        parallel_batch_positions: Some(2),
                        ranges_from: 0,
                        ..PassTuning::default()
                    }),
                    ..limits.clone()
                },
                _ if i % 2 == 1 => Limits {
                    tuning: limits.tuning.clone().with_pass(PassTuning {
                        ranges_from: 0,
                        ..PassTuning::default()
                    }),
                    ..limits.clone()
                },
                _ => limits.clone(),
            };
            let (results, last_level, (positions, exchanged)) =
                solve_among(ranks, sfen, &limits, &stop);
            // Each new position's order (8 bytes) went to every other rank, at the least.
            assert!(
                exchanged >= (8 * (ranks - 1) * positions) as u64,
                "{name} at {ranks}: {exchanged} bytes for {positions} positions"
            );
            // (Where memory ran short, every rank deepened alone.)
            if let Outcome::Mate(line) = &alone.outcome {
                by_the_pass += usize::from(last_level + 1 == line.len() as u32);
            }
            for (rank, result) in results.iter().enumerate() {
                let at = format!("{name}, rank {rank} of {ranks}");
                assert_eq!(result.outcome, alone.outcome, "{at}");
                assert_eq!(result.solutions, alone.solutions, "{at}");
                if let Outcome::Mate(line) = &result.outcome {
                    verify_helpmate(&Position::from_sfen(sfen).unwrap(), line).unwrap();
                }
            }
        }
    }
    // The ranks' pass itself found nearly every mate (rows of one ply have no level to make).
    assert!(
        by_the_pass * 10 >= helpmate_rows * 2 * 9,
        "{by_the_pass} of {} solves",
        helpmate_rows * 2
    );
}

#[test]
fn a_stop_ends_every_rank() {
    let sfen = helpmate_sfen("fmrs_morishige_1965");
    let limits = Limits {
        strategy: Strategy::BreadthFirst,
        threads: 1,
        ..Default::default()
    };
    let stop = AtomicBool::new(true);
    for result in solve_among(3, &sfen, &limits, &stop).0 {
        assert!(
            matches!(result.outcome, Outcome::Unknown { .. }),
            "{:?}",
            result.outcome
        );
    }
}

#[test]
fn ranks_with_their_links_on_disk_answer_alike_and_a_disk_error_ends_all() {
    let dir = tempfile::tempdir().unwrap();
    let on_disk = |dir: &std::path::Path| DiskBudget {
        dir: Some(dir.to_path_buf()),
        cap_bytes: 1 << 30,
        always: true,
    };
    let stop = AtomicBool::new(false);
    let (rows, _) = rows_up_to(120);
    for (name, sfen) in rows.iter().step_by(3) {
        let limits = Limits {
            strategy: Strategy::BreadthFirst,
            solution_limit: 5,
            threads: 1,
            ..Default::default()
        };
        let alone = solve_alone(sfen, &limits);
        let in_memory = solve_among(2, sfen, &limits, &stop).0;
        let limits = Limits {
            disk: on_disk(dir.path()),
            ..limits
        };
        for (result, in_memory) in solve_among(2, sfen, &limits, &stop)
            .0
            .iter()
            .zip(&in_memory)
        {
            assert_eq!(result.outcome, alone.outcome, "{name}");
            assert_eq!(result.solutions, alone.solutions, "{name}");
            // The same moves as with the links in memory: no deepening after the pass (which
            // a line that could not be read back from the disk would have cost).
            assert_eq!(result.nodes, in_memory.nodes, "{name}");
        }
    }
    // Nothing left behind: the links' files are unnamed.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    // A directory that is not there: every rank ends with the disk error.
    let limits = Limits {
        strategy: Strategy::BreadthFirst,
        threads: 1,
        disk: on_disk(&dir.path().join("missing")),
        ..Default::default()
    };
    let sfen = helpmate_sfen("fmrs_morishige_1965");
    for result in try_among(3, &sfen, &limits, &stop).0 {
        let error = result.expect_err("no links, no answer");
        assert!(error.contains("missing"), "{error}");
    }
}

/// Checkpoints in `dir` at every level boundary.
fn checkpoints(dir: &Path, start: CheckpointStart) -> Option<Checkpointing> {
    Some(Checkpointing {
        dir: dir.to_path_buf(),
        every: Duration::ZERO,
        start,
    })
}

/// The ranks' directories of the checkpoints in `dir` (one a problem and number of ranks).
fn ranks_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = (std::fs::read_dir(dir).unwrap())
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    dirs
}

/// The generation a rank's manifest names.
fn generation(manifest: &Path) -> u64 {
    let text = std::fs::read_to_string(manifest).unwrap();
    let line = (text.lines())
        .find(|l| l.starts_with("generation = "))
        .unwrap();
    line["generation = ".len()..].parse().unwrap()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &to.join(entry.file_name()));
        } else {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

/// The pass alone at one thread, counting up to 5, its disk (links, checkpoints) in `dir`.
fn counting_with_disk(dir: &Path) -> Limits {
    Limits {
        strategy: Strategy::BreadthFirst,
        solution_limit: 5,
        threads: 1,
        disk: DiskBudget {
            dir: Some(dir.to_path_buf()),
            cap_bytes: 1 << 30,
            always: false,
        },
        ..Default::default()
    }
}

#[test]
fn ranks_cut_off_at_a_random_level_resume_to_the_same_answer() {
    let mut random = rand_chacha::ChaCha8Rng::seed_from_u64(43);
    let stop = AtomicBool::new(false);
    let (rows, _) = rows_up_to(120);
    let mut resumed = 0;
    for (i, (name, sfen)) in rows.iter().enumerate().step_by(2) {
        let dir = tempfile::tempdir().unwrap();
        let limits = counting_with_disk(dir.path());
        let alone = solve_alone(sfen, &limits);
        let longest = match &alone.outcome {
            Outcome::Mate(line) => (line.len() as u32).saturating_sub(2),
            _ => 40,
        };
        let cut = random.random_range(1..=longest.max(1)) | 1;
        // Two ranks and three in turn; every third row with the keys frozen after each level.
        let ranks = 2 + (i / 2) % 2;
        let limits = Limits {
            tuning: limits.tuning.clone().with_pass(PassTuning {
                freeze_every_level: i % 3 == 0,
                ..limits.tuning.pass.clone()
            }),
            ..limits
        };
        let cut_off = Limits {
            max_plies: Some(cut),
            checkpoint: checkpoints(dir.path(), CheckpointStart::Fresh),
            ..limits.clone()
        };
        let first = solve_among(ranks, sfen, &cut_off, &stop).0;
        if !matches!(first[0].outcome, Outcome::NoMateWithin { .. }) {
            // Answered before the cut: the checkpoints went with the answer.
            assert_eq!(first[0].outcome, alone.outcome, "{name}");
            assert!(ranks_dirs(dir.path()).is_empty(), "{name}");
            continue;
        }
        let there = ranks_dirs(dir.path());
        assert_eq!(there.len(), 1, "{name}: the ranks' checkpoints");
        assert_eq!(
            ranks_dirs(&there[0]).len(),
            ranks,
            "{name}: a checkpoint a rank"
        );
        let resume = Limits {
            checkpoint: checkpoints(dir.path(), CheckpointStart::Resume),
            ..limits
        };
        for (rank, result) in solve_among(ranks, sfen, &resume, &stop)
            .0
            .iter()
            .enumerate()
        {
            let at = format!("{name} cut at {cut}, rank {rank} of {ranks}");
            assert_eq!(result.outcome, alone.outcome, "{at}");
            assert_eq!(result.solutions, alone.solutions, "{at}");
        }
        // Answered: nothing left.
        assert!(ranks_dirs(dir.path()).is_empty(), "{name}");
        resumed += 1;
    }
    assert!(resumed >= 30, "{resumed} rows resumed");
}

#[test]
fn ranks_go_on_from_the_generation_all_have_and_refuse_what_is_not_theirs() {
    let stop = AtomicBool::new(false);
    let dir = tempfile::tempdir().unwrap();
    let (rows, _) = rows_up_to(120);
    // A long row: many levels to cut at.
    let (name, sfen) = (rows.iter())
        .filter(|(name, _)| !name.starts_with("nomate"))
        .max_by_key(|(_, sfen)| {
            let limits = Limits {
                strategy: Strategy::BreadthFirst,
                ..Default::default()
            };
            match solve_alone(sfen, &limits).outcome {
                Outcome::Mate(line) => line.len(),
                _ => 0,
            }
        })
        .unwrap();
    let limits = counting_with_disk(dir.path());
    let alone = solve_alone(sfen, &limits);
    let Outcome::Mate(line) = &alone.outcome else {
        panic!("{name}: {:?}", alone.outcome)
    };
    let cut = (line.len() as u32 / 2) | 1;
    let run = |ranks, start, max_plies| {
        let limits = Limits {
            max_plies,
            checkpoint: checkpoints(dir.path(), start),
            ..limits.clone()
        };
        try_among(ranks, sfen, &limits, &stop).0
    };
    // Cut off at `cut` plies, then (resumed) one level later: generations further.
    for result in run(2, CheckpointStart::Fresh, Some(cut)) {
        assert!(matches!(
            result.unwrap().outcome,
            Outcome::NoMateWithin { .. }
        ));
    }
    let ranks_dir = ranks_dirs(dir.path()).pop().unwrap();
    let before = tempfile::tempdir().unwrap();
    copy_dir(&ranks_dir, before.path());
    for result in run(2, CheckpointStart::Resume, Some(cut + 2)) {
        assert!(matches!(
            result.unwrap().outcome,
            Outcome::NoMateWithin { .. }
        ));
    }
    let (rank0, rank1) = (ranks_dir.join("rank-0"), ranks_dir.join("rank-1"));
    let older = generation(&before.path().join("rank-0/manifest.toml"));
    let newer = generation(&rank0.join("manifest.toml"));
    assert!(newer > older, "{newer} after {older}");
    assert_eq!(generation(&rank1.join("manifest.toml")), newer);
    assert!(
        !rank0.join("manifest.prev.toml").exists(),
        "let go once all had the new one"
    );

    // Started afresh over them: refused by every rank.
    for result in run(2, CheckpointStart::Fresh, None) {
        let error = result.expect_err("a checkpoint is there");
        assert!(error.contains("already holds"), "{error}");
    }
    // Taken by another number of ranks: refused by every rank.
    for result in run(3, CheckpointStart::Resume, None) {
        let error = result.expect_err("a checkpoint of two ranks");
        assert!(error.contains("among 3 ranks"), "{error}");
    }
    // Damaged on one rank: every rank refuses.
    let keys = rank1.join(format!("keys.{newer}"));
    let sound = std::fs::read(&keys).unwrap();
    let mut damaged = sound.clone();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 1;
    std::fs::write(&keys, &damaged).unwrap();
    for result in run(2, CheckpointStart::Resume, None) {
        let error = result.expect_err("a damaged checkpoint");
        assert!(error.contains("damaged"), "{error}");
    }
    std::fs::write(&keys, &sound).unwrap();

    // Stopped while rank 0 had written its newer generation and rank 1 not: rank 0 holds both
    // (the older one's manifest kept aside), rank 1 the older alone, its links cut back.
    let old = |file: &str| before.path().join("rank-0").join(file);
    std::fs::copy(old("manifest.toml"), rank0.join("manifest.prev.toml")).unwrap();
    for file in ["keys", "level", "globals"] {
        let name = format!("{file}.{older}");
        std::fs::copy(old(&name), rank0.join(&name)).unwrap();
    }
    std::fs::remove_dir_all(&rank1).unwrap();
    copy_dir(&before.path().join("rank-1"), &rank1);
    for (rank, result) in run(2, CheckpointStart::Resume, None)
        .into_iter()
        .enumerate()
    {
        let result = result.unwrap();
        assert_eq!(result.outcome, alone.outcome, "{name}, rank {rank}");
        assert_eq!(result.solutions, alone.solutions, "{name}, rank {rank}");
    }
    assert!(ranks_dirs(dir.path()).is_empty(), "answered: nothing left");

    // Ranks with no generation in common (one a generation ahead, its previous one gone).
    for result in run(2, CheckpointStart::Fresh, Some(cut)) {
        assert!(matches!(
            result.unwrap().outcome,
            Outcome::NoMateWithin { .. }
        ));
    }
    let ranks_dir = ranks_dirs(dir.path()).pop().unwrap();
    let before = tempfile::tempdir().unwrap();
    copy_dir(&ranks_dir.join("rank-1"), before.path());
    for result in run(2, CheckpointStart::Resume, Some(cut + 2)) {
        assert!(matches!(
            result.unwrap().outcome,
            Outcome::NoMateWithin { .. }
        ));
    }
    std::fs::remove_dir_all(ranks_dir.join("rank-1")).unwrap();
    copy_dir(before.path(), &ranks_dir.join("rank-1"));
    for result in run(2, CheckpointStart::Resume, None) {
        let error = result.expect_err("no generation in common");
        assert!(error.contains("no generation in common"), "{error}");
    }
}
