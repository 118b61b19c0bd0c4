//! The loop against one thread's levels, and its stops.

mod same_levels {
    use crate::search::bfs::tuning::NARROW_CLAIMS_PERCENT;
    use crate::search::bfs::{search_in_pool, BfsOutcome, DiskBudget, PassLimits, PassTuning};
    use crate::search::interrupt::Interrupt;
    use crate::shogi::{Position, RuleSet};
    use std::sync::atomic::AtomicBool;

    /// How the loop is set for a pass: levels narrower than `below` go to it (0: none), which
    /// gives a level back once its claims fill `claims_percent` of their table; `batch`
    /// positions a batch (None: guided).
    #[derive(Clone, Copy, Debug)]
    struct Setting {
        below: usize,
        claims_percent: usize,
        batch: Option<usize>,
        /// No memory for the threads to grow their shards with: the calling thread inserts
        /// the keys that need it.
        tight: bool,
    }

    /// A whole pass from `sfen` (for mates of at most `max_plies`): the figures of every level
    /// (plies, positions, keys) and the outcome, with its lines and count.
    fn pass((sfen, max_plies): (&str, u32), threads: usize, cap: u32, setting: Setting) -> Pass {
        let root = Position::from_sfen(sfen).unwrap();
        let pool = (threads > 1).then(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
        });
        let stop = AtomicBool::new(false);
        let (log, levels) = crossbeam_channel::unbounded();
        let limits = PassLimits {
            level_log: Some(&log),
            budget_bytes: 1 << 30,
            solution_cap: cap,
            selfmate: false,
            rules: RuleSet::PLAIN,
            max_plies,
            interrupt: Interrupt {
                stop: &stop,
                deadline: None,
                mate_elsewhere: None,
            },
            pool: pool.as_ref(),
            disk: &DiskBudget::default(),
            give_up_when_bushy: false,
            checkpoint: None,
            tuning: &PassTuning {
                parallel_batch_positions: setting.batch,
                narrow_below: setting.below,
                ranges_from: 0,
                narrow_claims_percent: setting.claims_percent,
                narrow_key_allowance: if setting.tight { 0 } else { usize::MAX },
                ..PassTuning::threads_on_every_level()
            },
        };
        let mut nodes = 0;
        let (outcome, _pass) = search_in_pool(
            &root,
            &limits,
            &mut nodes,
            &mut |_| {},
            &mut || 0,
            &mut crate::search::bfs::Caches::new(),
        );
        let levels = levels
            .try_iter()
            .map(|l| (l.plies, l.positions, l.keys))
            .collect();
        let outcome = match outcome {
            BfsOutcome::Mate { lines, count } => format!("{count} {lines:?}"),
            BfsOutcome::NoMate => "no mate".into(),
            BfsOutcome::GaveUp {
                lower_bound,
                reason,
            } => format!("gave up at {lower_bound}: {reason:?}"),
        };
        Pass { levels, outcome }
    }

    /// What a pass came to: every level's (plies, positions, keys), and the outcome.
    struct Pass {
        levels: Vec<(u32, usize, usize)>,
        outcome: String,
    }

    /// With every level from the first in the loop, at two and three threads, the pass has
    /// one thread's levels and outcome: the same positions and keys on every level, the same
    /// lines in the same order, the same count; also with levels given back all the time
    /// (a claims table that is "full" at a few per cent), with batches of one position, with
    /// too little memory for the threads to insert their keys, and with a pass cut short at a
    /// depth.
    #[test]
    fn the_narrow_loop_gives_one_threads_levels_and_lines() {
        let problems = [
            // Levels of up to 3,205 positions, many reached from several parents.
            "ggssn2p1/lgssn3l/+R8/5N2k/4bn3/3l5/9/2g4L1/KBr3PP1 b 11P4p 1",
            "9/9/9/9/7bb/1ppssssp1/K5k2/+RL1l1gg2/rL3gg1+l b 4N15P 1",
            // Two solutions each, mates on several parents of the mate level.
            "9/9/9/4G4/4G4/4G4/4G4/9/4k4 b 2r2b4s4n4l18p 1",
            "9/9/9/3G1G3/4G4/4G4/9/4k4/9 b 2r2b4s4n4l18p 1",
        ];
        let settings = [
            Setting {
                below: usize::MAX,
                claims_percent: NARROW_CLAIMS_PERCENT,
                batch: None,
                tight: false,
            },
            Setting {
                below: usize::MAX,
                claims_percent: NARROW_CLAIMS_PERCENT,
                batch: Some(1),
                tight: false,
            },
            Setting {
                below: usize::MAX,
                claims_percent: 2,
                batch: Some(3),
                tight: false,
            },
            Setting {
                below: usize::MAX,
                claims_percent: NARROW_CLAIMS_PERCENT,
                batch: None,
                tight: true,
            },
        ];
        // The first also cut short: the loop stops at the depth the pass may not pass.
        let runs = problems
            .iter()
            .map(|&sfen| (sfen, u32::MAX))
            .chain([(problems[0], 31)]);
        for problem in runs {
            let sfen = problem.0;
            for cap in [1, 1000] {
                let one = pass(problem, 1, cap, settings[0]);
                assert!(one.levels.len() > 4, "{sfen}: {} levels", one.levels.len());
                for threads in [2, 3] {
                    for setting in settings {
                        let many = pass(problem, threads, cap, setting);
                        assert_eq!(
                            one.outcome, many.outcome,
                            "{sfen}, cap {cap}, {threads} threads, {setting:?}"
                        );
                        assert!(
                            one.levels == many.levels,
                            "{sfen}, cap {cap}, {threads} threads, {setting:?}: levels differ"
                        );
                    }
                }
            }
        }
        // The tight budget had the threads leave keys to the calling thread.
        assert!(
            crate::search::bfs::expand::narrow::step::LEFTOVERS
                .load(std::sync::atomic::Ordering::Relaxed)
                > 0
        );
    }
}

mod stops {
    use crate::search::bfs::tuning::NARROW_BELOW;
    use crate::search::bfs::{
        search_in_pool, BfsOutcome, DiskBudget, GiveUp, PassLimits, PassTuning,
    };
    use crate::search::interrupt::{Abort, Interrupt};
    use crate::shogi::{Position, RuleSet};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    /// A stop during the narrow loop ends every thread's part within a poll: the pass gives
    /// up at once, stopped, with a bound below the problem's length (加藤徹「寿限無」, 19,447
    /// plies: some 9,700 narrow levels, a second or more to solve), at 2 and 4 threads; so does
    /// a stop during the per-level threaded expansion (the loop off), and one during the
    /// one-thread pass (whose levels here are each fewer nodes than a poll's interval).
    #[test]
    fn a_stop_ends_the_narrow_loop_at_once() {
        let root = Position::from_sfen(
            "l6ss/1KB1r2bL/1GL3ss1/k1l3p1P/1nnn1p1P1/Pn2p1P2/2PP1P3/1P2P4/9 b r3g6p 1",
        )
        .unwrap();
        for (threads, narrow_below) in [(2, NARROW_BELOW), (4, NARROW_BELOW), (2, 0), (1, 0)] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let stop = AtomicBool::new(false);
            let limits = PassLimits {
                level_log: None,
                budget_bytes: 1 << 30,
                solution_cap: 2,
                selfmate: false,
                rules: RuleSet::PLAIN,
                max_plies: u32::MAX,
                interrupt: Interrupt {
                    stop: &stop,
                    deadline: None,
                    mate_elsewhere: None,
                },
                pool: (threads > 1).then_some(&pool),
                disk: &DiskBudget::default(),
                give_up_when_bushy: false,
                checkpoint: None,
                tuning: &PassTuning {
                    narrow_below,
                    ranges_from: 0,
                    threads_from_nodes: 0,
                    ..PassTuning::default()
                },
            };
            let stopped_at = std::sync::Mutex::new(None);
            let (outcome, _pass) = std::thread::scope(|scope| {
                scope.spawn(|| {
                    std::thread::sleep(Duration::from_millis(150));
                    *stopped_at.lock().unwrap() = Some(Instant::now());
                    stop.store(true, Ordering::Relaxed);
                });
                let mut nodes = 0;
                search_in_pool(
                    &root,
                    &limits,
                    &mut nodes,
                    &mut |_| {},
                    &mut || 0,
                    &mut crate::search::bfs::Caches::new(),
                )
            });
            let late = stopped_at.lock().unwrap().expect("stopped").elapsed();
            assert!(
                late < Duration::from_millis(100),
                "{threads} threads: {late:?}"
            );
            match outcome {
                BfsOutcome::GaveUp {
                    lower_bound,
                    reason: GiveUp::Aborted(Abort::Stopped),
                } => assert!((3..19_447).contains(&lower_bound), "{lower_bound}"),
                _ => panic!("{threads} threads: not stopped"),
            }
        }
    }

    #[test]
    fn claims_pages_are_written_ahead_once_and_slots_work_as_before() {
        use std::sync::atomic::Ordering::Relaxed;
        let claims = crate::search::bfs::expand::narrow::Claims::new().unwrap();
        claims.prepare(1023);
        assert_eq!(claims.written.load(Relaxed), 2048);
        // A narrower level later writes nothing more.
        claims.prepare(255);
        assert_eq!(claims.written.load(Relaxed), 2048);
        let key = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210u128;
        assert_eq!(claims.lookup(key, 1023), 0);
        let (slot, taken) = claims.slot(key, 1023).unwrap();
        assert!(taken);
        assert_eq!(claims.slot(key, 1023), Some((slot, false)));
        // A wider one writes the pages beyond, and leaves the slot taken.
        claims.prepare(4095);
        assert_eq!(claims.written.load(Relaxed), 8192);
        assert_eq!(claims.slot(key, 1023), Some((slot, false)));
        claims.free(&[slot as u32]);
        assert_eq!(claims.slot(key, 1023), Some((slot, true)));
    }
}
