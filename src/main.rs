//! The `kyozume` binary: with no arguments a USI engine, otherwise a command-line tool.

use clap::{Parser, Subcommand};
use kyozume::config::EngineConfig;
use kyozume::shogi::{Position, Stipulation};
use kyozume::workbench::{self, input::Format, SolveOptions};
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(
    name = "kyozume",
    version,
    about = "Shogi helpmate (協力詰) solver and USI engine. Without a command: the USI engine."
)]
struct Cli {
    /// Read default option values from this file instead of engine.toml.
    #[arg(long, global = true, value_name = "PATH")]
    config: Option<std::path::PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Solve helpmates: shortest length, uniqueness, the solution in Japanese and USI.
    ///
    /// Exit status: 0 solved, 1 no helpmate (proven), 2 bad input, 3 not solved within the
    /// limits, 4 the answer could not be written; with --batch: 0 done, 130 interrupted by
    /// Ctrl-C.
    Solve {
        /// The problem: an SFEN, a `position ...` string, or a file holding an SFEN, a BOD
        /// diagram or a KIF file (UTF-8 or Shift_JIS); `-` or nothing reads stdin.
        input: Option<String>,
        /// Input format (default: detected from the text).
        #[arg(long, value_enum, default_value = "auto")]
        format: Format,
        /// Give up a problem after this many seconds.
        #[arg(long, value_name = "SECONDS")]
        time_limit: Option<f64>,
        /// Memory for the search in MB: the table, helper threads and breadth-first pass all fit
        /// in it; the process stays within it + 64 MB + 64 MB a thread (default: USI_Hash from
        /// engine.toml).
        #[arg(long, value_name = "MB", value_parser = clap::value_parser!(u64).range(HASH_MB_RANGE))]
        hash: Option<u64>,
        /// Count shortest solutions up to N (1 to 1000); 1 skips the uniqueness check (default:
        /// SolutionLimit from engine.toml).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(SOLUTIONS_RANGE))]
        solutions: Option<u16>,
        /// One JSON object per problem, one line each.
        #[arg(long)]
        json: bool,
        /// Solve every problem in FILE (one a line: SFEN, or name<TAB>SFEN[<TAB>stipulation]).
        #[arg(long, value_name = "FILE", conflicts_with = "input")]
        batch: Option<String>,
        /// Search threads for each problem (default: Threads from engine.toml, else the
        /// machine's logical cores).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
        threads: Option<u16>,
        /// With --batch: solve N problems at once, each with 1/N of the memory (results still
        /// in input order).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
        jobs: Option<u16>,
        /// After solving, show what the engine knows about a position of the problem: its
        /// table entry, the bounds of its moves and the shortest line from it. POSITION is an
        /// SFEN, a `position ...` string, or USI moves played from the problem.
        #[arg(long, value_name = "POSITION", conflicts_with = "batch")]
        probe: Option<String>,
        /// Print the solution as a game record GUIs read (KIF, KI2 or CSA) instead of the
        /// report (when there is no solution, the report as usual).
        #[arg(long, value_enum, conflicts_with_all = ["batch", "json", "probe"])]
        output: Option<workbench::RecordFormat>,
        /// Print the figures of each breadth-first level on stderr as it finishes (plies,
        /// positions, keys kept, memory, time, moves played, the level's checks, the positions
        /// met again by how many levels after they were first kept and the positions searched
        /// again after being let go of, both estimated from a sample of 1 key in 1,024, and the
        /// checkpoints' seconds and MB): where a long problem's memory goes.
        #[arg(long, conflicts_with = "batch")]
        levels: bool,
        /// Where a breadth-first pass that outgrows the memory writes its temporary file
        /// (default: TempDir from engine.toml, else the system's temporary directory).
        #[arg(long, value_name = "DIR")]
        temp_dir: Option<std::path::PathBuf>,
        /// MB that pass may write there; 0 never uses the disk (default: DiskCap from
        /// engine.toml, else 65536).
        #[arg(long, value_name = "MB")]
        disk_cap: Option<usize>,
        /// Write checkpoints of a long problem's breadth-first pass into DIR (made if missing;
        /// each problem in a directory of its own), so that a run stopped by a reboot, Ctrl-C or
        /// a killed job can go on with --resume DIR (default: CheckpointDir from engine.toml).
        /// A checkpoint is removed once its problem is answered.
        #[arg(long, value_name = "DIR", conflicts_with = "resume")]
        checkpoint: Option<std::path::PathBuf>,
        /// Minutes between two checkpoints, fractions allowed; 0 writes one at every level
        /// (default: CheckpointMinutes from engine.toml, else 10).
        #[arg(long, value_name = "MINUTES")]
        checkpoint_every: Option<f64>,
        /// Go on from the problem's checkpoint in DIR (written by --checkpoint DIR), writing
        /// further checkpoints there. With --batch, problems without one start afresh.
        #[arg(long, value_name = "DIR")]
        resume: Option<std::path::PathBuf>,
        /// Share the breadth-first pass among the processes of an MPI job (`mpirun -np P
        /// kyozume solve --distributed ...`): each keeps its share of the positions within
        /// --hash and expands them with --threads threads; rank 0 prints the answer (with
        /// --batch, the problems are taken one at a time; with --checkpoint, each rank keeps
        /// its own, and --resume needs as many ranks). Needs a build with `--features mpi`.
        #[arg(long, conflicts_with_all = ["jobs", "probe"])]
        distributed: bool,
        /// What the problem asks for: H# (ばか詰, the default) or HS# (協力自玉詰: the
        /// defender's last move mates the attacker). Stands over what a file names.
        #[arg(long, value_name = "H#|HS#", value_parser = parse_goal)]
        stipulation: Option<kyozume::shogi::Goal>,
        /// 受先: the side to move is the defender and moves first.
        #[arg(long)]
        defender_first: bool,
        /// The rules as composers write them: 協力詰, ばか詰, 協力自玉詰, ばか自殺詰,
        /// 偶数手ばか詰, 受先ばか詰, 受先協力自玉詰 (or H#, HS#), with the conditions
        /// before them (安南ばか詰, 受先対面打歩詰可協力自玉詰, キルケばか詰, PWC受先ばか詰,
        /// マドラシ, 禁欲) or the options' values (Annan, Circe, KMadrasi, Greedy, PawnDropMate:
        /// "Annan Circe HS#"). Conditions alone keep ばか詰. Stands over what a file names.
        #[arg(long, value_name = "TEXT", conflicts_with_all = ["stipulation", "defender_first"])]
        rules: Option<String>,
        /// Search only solutions of at most N plies: the shortest within N, or a proof that
        /// there is none within N ("nomate", exit 1). 0: no bound. Stands over what a file
        /// states and over MaxPlies from engine.toml.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=kyozume::config::MAX_MAX_PLIES as i64))]
        max_plies: Option<u32>,
        /// The stated length, as composers publish it ("協力自玉詰 9手"): searches within N
        /// plies and judges the answer against it: 完全 (sound: one solution of N plies, none
        /// shorter), 余詰 (cooked), 早詰 (short: a shorter one, given), 不詰 (none within N).
        /// Counts at least 2 solutions. Stands over a file's 手数＝N or N手.
        #[arg(long, value_name = "N", conflicts_with = "max_plies",
              value_parser = clap::value_parser!(u32).range(1..=kyozume::config::MAX_MAX_PLIES as i64))]
        plies: Option<u32>,
    },
    /// Solve the benchmark suite and report nodes, time and nodes/s (how speed is measured).
    Bench {
        /// The long problems (1,000+ plies) instead of the default short and medium ones.
        #[arg(long, conflicts_with = "bushy")]
        long: bool,
        /// The bushy lone-king problems (11-17 plies) instead of the default ones.
        #[arg(long)]
        bushy: bool,
        /// Count shortest solutions up to N, as `SolutionLimit` (default 1: the length only).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(i64).range(SOLUTIONS_RANGE))]
        solutions: Option<i64>,
        /// Memory for the search in MB (default 1024; 8192 with --long, which the 1001-ply
        /// problem needs).
        #[arg(long, value_name = "MB", value_parser = clap::value_parser!(u64).range(HASH_MB_RANGE))]
        hash: Option<u64>,
        /// Give up a problem after this many seconds.
        #[arg(long, value_name = "SECONDS")]
        time_limit: Option<f64>,
        /// Only problems whose name contains this text (repeat it for several).
        #[arg(long)]
        filter: Vec<String>,
        /// Instead of solving: time the checks generator against filtering all legal moves.
        #[arg(long, conflicts_with_all = ["long", "bushy", "rounds"])]
        checks: bool,
        /// Search threads (default 1, so that figures compare across machines). Several, as
        /// `1,2`, compare them: each problem is solved at each count back to back (A, B, then
        /// B, A in the next round ...) for --rounds rounds, and each problem's median times and
        /// speed-ups are reported.
        #[arg(long, value_name = "N[,N...]", value_delimiter = ',',
              value_parser = clap::value_parser!(u16).range(1..=256))]
        threads: Vec<u16>,
        /// Rounds of alternated runs (default 1; 5 when --threads lists several counts).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1000))]
        rounds: Option<u16>,
        /// With --threads 1,2: each round also solves each problem twice at once at one thread
        /// (two solvers, each with --hash), to report what the machine gives two separate
        /// solves (the ceiling) and how near the two-thread solve comes to it (efficiency).
        #[arg(long)]
        pair: bool,
    },
    /// Count the leaf nodes of the legal-move tree (move generator test and benchmark).
    Perft {
        /// Depth in plies.
        depth: u32,
        /// Position to start from (default: the initial position).
        #[arg(long)]
        sfen: Option<String>,
        /// Print the count below each root move.
        #[arg(long)]
        divide: bool,
        /// Play every last-ply move instead of counting generated moves.
        #[arg(long)]
        no_bulk: bool,
        /// Fairy conditions as composers write them (安南, 安北, 対面, 背面, キルケ, アンチキルケ,
        /// PWC, マドラシ, Kマドラシ, 打歩詰可, 強欲, 禁欲, combined as printed: 安南キルケ) or the
        /// USI options' values (Annan, Circe, Madrasi, Greedy). Each file-5 choice of a
        /// キルケ or アンチキルケ capture counts as a move.
        #[arg(long, value_name = "TEXT")]
        rules: Option<String>,
    },
}

/// `--stipulation`: H# or HS#.
fn parse_goal(text: &str) -> Result<kyozume::shogi::Goal, String> {
    match Stipulation::parse(text) {
        Ok(s) if !s.defender_first => Ok(s.goal),
        Ok(_) => Err("the defender moving first is --defender-first".to_string()),
        Err(_) => Err(format!("'{text}' is not H# or HS#")),
    }
}

/// `--hash`: the `USI_Hash` range.
const HASH_MB_RANGE: std::ops::RangeInclusive<u64> = 1..=kyozume::config::MAX_HASH_MB as u64;
/// `--solutions`: the `SolutionLimit` range.
const SOLUTIONS_RANGE: std::ops::RangeInclusive<i64> =
    1..=kyozume::config::MAX_SOLUTION_LIMIT as i64;

fn load_config(cli: &Cli) -> Result<EngineConfig, ExitCode> {
    EngineConfig::load(cli.config.as_deref()).map_err(|e| {
        eprintln!("kyozume: {e}");
        ExitCode::from(2)
    })
}

/// This process's rank of the MPI job it is a part of, and MPI's thread, to join at the end.
#[cfg(feature = "mpi")]
fn start_ranks() -> Result<(kyozume::search::Ranks, kyozume::search::MpiThread), ExitCode> {
    match kyozume::search::start_mpi() {
        Ok((rank, thread)) => Ok((kyozume::search::Ranks(std::sync::Arc::new(rank)), thread)),
        Err(e) => {
            eprintln!("kyozume solve: --distributed: {e}");
            Err(ExitCode::from(workbench::exit::BAD_INPUT))
        }
    }
}

#[cfg(not(feature = "mpi"))]
fn start_ranks() -> Result<(kyozume::search::Ranks, NoMpi), ExitCode> {
    eprintln!(
        "kyozume solve: --distributed: this kyozume was built without MPI \
         (build it with `cargo build --release --features mpi`, OpenMPI installed)"
    );
    Err(ExitCode::from(workbench::exit::BAD_INPUT))
}

/// What stands for MPI's thread in a build without MPI.
#[cfg(not(feature = "mpi"))]
struct NoMpi;

#[cfg(not(feature = "mpi"))]
impl NoMpi {
    fn join(self) {}
}

/// The checkpoints `kyozume solve` writes, from `--checkpoint`, `--checkpoint-every` and
/// `--resume` over `CheckpointDir` and `CheckpointMinutes`.
fn checkpointing(
    config: &kyozume::config::EngineConfig,
    (checkpoint, every, resume): (
        &Option<std::path::PathBuf>,
        &Option<f64>,
        &Option<std::path::PathBuf>,
    ),
    batch: bool,
) -> Result<Option<kyozume::search::Checkpointing>, ExitCode> {
    use kyozume::search::{CheckpointStart, Checkpointing};
    let bad = |message: String| {
        eprintln!("kyozume solve: {message}");
        Err(ExitCode::from(workbench::exit::BAD_INPUT))
    };
    let every = match every {
        Some(m) if !(*m >= 0.0 && m.is_finite() && *m <= 1e6) => {
            return bad("--checkpoint-every must be a number of minutes, 0 or more".into())
        }
        Some(m) => Duration::from_secs_f64(m * 60.0),
        None => Duration::from_secs(config.checkpoint_minutes as u64 * 60),
    };
    let (dir, start) = match (checkpoint, resume) {
        (_, Some(dir)) if !dir.is_dir() => {
            return bad(format!("--resume {}: not a directory", dir.display()))
        }
        (_, Some(dir)) if batch => (dir.clone(), CheckpointStart::Either),
        (_, Some(dir)) => (dir.clone(), CheckpointStart::Resume),
        (Some(dir), None) => {
            if let Err(e) = std::fs::create_dir_all(dir) {
                return bad(format!("--checkpoint {}: {e}", dir.display()));
            }
            (dir.clone(), CheckpointStart::Fresh)
        }
        (None, None) => match &config.checkpoint_dir {
            Some(dir) => (dir.clone(), CheckpointStart::Either),
            None if every != Duration::from_secs(config.checkpoint_minutes as u64 * 60) => {
                return bad("--checkpoint-every needs --checkpoint DIR or --resume DIR".into())
            }
            None => return Ok(None),
        },
    };
    Ok(Some(Checkpointing { dir, every, start }))
}

fn seconds(value: Option<f64>, what: &str) -> Result<Option<Duration>, ExitCode> {
    match value {
        Some(t) if !(t > 0.0 && t.is_finite()) => {
            eprintln!("kyozume {what}: --time-limit must be a positive number of seconds");
            Err(ExitCode::from(2))
        }
        t => Ok(t.map(Duration::from_secs_f64)),
    }
}

fn main() -> ExitCode {
    kyozume::search::tune_allocator();
    let cli = Cli::parse();
    match run(&cli) {
        Ok(code) | Err(code) => code,
    }
}

fn run(cli: &Cli) -> Result<ExitCode, ExitCode> {
    match &cli.command {
        None => {
            let config = load_config(cli)?;
            let stdin = std::io::stdin();
            let status = kyozume::usi::run(
                config,
                std::io::BufReader::new(stdin),
                kyozume::usi::Output::stdout(),
                |engine| {
                    // SIGINT / SIGTERM: the running search stops and answers, queued work is
                    // dropped, and the process ends (stdin may still be open, so the input
                    // loop cannot be relied on to notice).
                    let _ = ctrlc::set_handler(move || {
                        engine.interrupt();
                        engine.wait(Duration::from_secs(2));
                        std::process::exit(kyozume::usi::INTERRUPTED_STATUS);
                    });
                },
            );
            Ok(ExitCode::from(status as u8))
        }
        Some(Command::Solve {
            input,
            format,
            time_limit,
            hash,
            solutions,
            json,
            batch,
            probe,
            output,
            threads,
            jobs,
            levels,
            temp_dir,
            disk_cap,
            checkpoint,
            checkpoint_every,
            resume,
            distributed,
            stipulation,
            defender_first,
            rules,
            max_plies,
            plies,
        }) => {
            if jobs.is_some() && batch.is_none() {
                eprintln!("kyozume solve: --jobs needs --batch FILE (one problem uses --threads)");
                return Err(ExitCode::from(workbench::exit::BAD_INPUT));
            }
            let mut config = load_config(cli)?;
            if let Some(dir) = temp_dir {
                if !dir.is_dir() {
                    eprintln!(
                        "kyozume solve: --temp-dir {}: not a directory",
                        dir.display()
                    );
                    return Err(ExitCode::from(workbench::exit::BAD_INPUT));
                }
                config.temp_dir = Some(dir.clone());
            }
            config.disk_cap_mb = disk_cap.unwrap_or(config.disk_cap_mb);
            let checkpointing = checkpointing(
                &config,
                (checkpoint, checkpoint_every, resume),
                batch.is_some(),
            )?;
            let (given, rules_length) = match rules {
                Some(text) => match Stipulation::parse_stated(text) {
                    Ok((s, n)) => (Some(s), n),
                    Err(e) => {
                        eprintln!("kyozume solve: --rules: {e}");
                        return Err(ExitCode::from(workbench::exit::BAD_INPUT));
                    }
                },
                None if stipulation.is_some() || *defender_first => (
                    Some(Stipulation {
                        goal: stipulation.unwrap_or(config.goal),
                        defender_first: *defender_first,
                        conditions: config.conditions(),
                    }),
                    None,
                ),
                None => (None, None),
            };
            // The command line's bound (`--plies`, `--max-plies`, a length in `--rules`)
            // stands over a file's; engine.toml's `MaxPlies` is the default of both.
            let length_given = match (*plies, *max_plies, rules_length) {
                (Some(n), _, _) | (None, None, Some(n)) => Some(Some(workbench::Length::Stated(n))),
                (None, Some(0), _) => Some(None),
                (None, Some(n), _) => Some(Some(workbench::Length::AtMost(n))),
                (None, None, None) => None,
            };
            let options = SolveOptions {
                time_limit: seconds(*time_limit, "solve")?,
                hash_mb: hash.map_or(config.hash_mb, |mb| mb as usize),
                solutions: solutions.map_or(config.solution_limit, usize::from),
                threads: threads.map_or(config.threads, usize::from),
                jobs: jobs.map_or(1, usize::from),
                json: *json,
                format: *format,
                probe: probe.clone(),
                output: *output,
                levels: *levels,
                disk: config.disk_budget(),
                checkpoint: checkpointing,
                stipulation: given.unwrap_or(config.stipulation()),
                stipulation_given: given.is_some(),
                length: length_given.unwrap_or(config.max_plies().map(workbench::Length::AtMost)),
                length_given: length_given.is_some(),
                ..Default::default()
            };
            let (options, mpi) = match distributed {
                true => {
                    let (ranks, mpi) = start_ranks()?;
                    (
                        SolveOptions {
                            ranks: Some(ranks),
                            ..options
                        },
                        Some(mpi),
                    )
                }
                false => (options, None),
            };
            if let Some(file) = batch {
                let status = workbench::batch::run(file, &options);
                drop(options);
                if let Some(mpi) = mpi {
                    mpi.join();
                }
                return Ok(ExitCode::from(status));
            }
            // (Under MPI only rank 0 is given stdin: the others read nothing, and every rank
            // then ends, see `solve_one`.)
            let status = match workbench::read_input(input.as_deref()) {
                Ok(text) => workbench::solve_one(&text, &options),
                Err(e) => {
                    eprintln!("kyozume solve: cannot read the input: {e}");
                    workbench::all_ranks_ready(&options, false);
                    workbench::exit::BAD_INPUT
                }
            };
            drop(options);
            if let Some(mpi) = mpi {
                mpi.join();
            }
            Ok(ExitCode::from(status))
        }
        Some(Command::Bench { checks: true, .. }) => {
            match kyozume::bench::run_checks(&mut std::io::stdout()) {
                Ok(true) => Ok(ExitCode::SUCCESS),
                Ok(false) => {
                    eprintln!("kyozume bench --checks: the direct generator is not the faster, or the sets differ");
                    Ok(ExitCode::FAILURE)
                }
                Err(e) => {
                    eprintln!("kyozume bench: {e}");
                    Err(ExitCode::from(2))
                }
            }
        }
        Some(Command::Bench {
            long,
            bushy,
            solutions,
            hash,
            time_limit,
            filter,
            threads,
            rounds,
            pair,
            ..
        }) => {
            let threads: Vec<usize> = if threads.is_empty() {
                vec![1]
            } else {
                threads.iter().map(|&t| usize::from(t)).collect()
            };
            let default_rounds = if threads.len() > 1 { 5 } else { 1 };
            let options = kyozume::bench::BenchOptions {
                rounds: rounds.map_or(default_rounds, usize::from),
                threads,
                group: match (*long, *bushy) {
                    (true, _) => kyozume::bench::Group::Long,
                    (_, true) => kyozume::bench::Group::Bushy,
                    _ => kyozume::bench::Group::Default,
                },
                hash_mb: hash.map_or(if *long { 8192 } else { 1024 }, |mb| mb as usize),
                solutions: solutions.map_or(1, |n| n as usize),
                time_limit: seconds(*time_limit, "bench")?,
                filters: filter.clone(),
                pair: *pair,
            };
            let result = kyozume::search::with_search_stack(|| {
                kyozume::bench::run(&options, &mut std::io::stdout())
            });
            match result {
                Ok(true) => Ok(ExitCode::SUCCESS),
                Ok(false) => {
                    eprintln!("kyozume bench: some answers were wrong");
                    Ok(ExitCode::FAILURE)
                }
                Err(e) => {
                    eprintln!("kyozume bench: {e}");
                    Err(ExitCode::from(2))
                }
            }
        }
        Some(Command::Perft {
            depth,
            sfen,
            divide: per_move,
            no_bulk,
            rules,
        }) => run_perft(
            *depth,
            sfen.as_deref(),
            *per_move,
            !no_bulk,
            rules.as_deref(),
        ),
    }
}

fn run_perft(
    depth: u32,
    sfen: Option<&str>,
    per_move: bool,
    bulk: bool,
    rules: Option<&str>,
) -> Result<ExitCode, ExitCode> {
    use kyozume::shogi::conditions::Conditions;
    use kyozume::shogi::perft::{divide_rules, perft_rules};
    let conditions = match rules.map(Conditions::parse_prefix) {
        None => Conditions::NONE,
        Some(Ok((c, ""))) => c,
        Some(Ok((_, rest))) => {
            eprintln!("kyozume perft: --rules: '{rest}' is not a condition");
            return Err(ExitCode::from(2));
        }
        Some(Err(e)) => {
            eprintln!("kyozume perft: --rules: {e}");
            return Err(ExitCode::from(2));
        }
    };
    let rule_set = kyozume::shogi::RuleSet::new(conditions);
    let mut pos = match sfen {
        None => Position::startpos(),
        Some(s) => Position::from_sfen_under(s, rule_set).map_err(|e| {
            eprintln!("kyozume perft: invalid --sfen: {e}");
            ExitCode::from(2)
        })?,
    };
    let start = Instant::now();
    let mut text = String::new();
    let nodes = if per_move && depth > 0 {
        let parts = divide_rules(&mut pos, depth, bulk, rule_set);
        for (m, n) in &parts {
            text += &format!("{m}: {n}\n");
        }
        parts.iter().map(|(_, n)| n).sum()
    } else {
        perft_rules(&mut pos, depth, bulk, rule_set)
    };
    let secs = start.elapsed().as_secs_f64();
    text += &format!("Nodes searched: {nodes}\n");
    workbench::write_stdout(&text, "kyozume perft").map_err(ExitCode::from)?;
    eprintln!(
        "time {:.3} s, {:.2} M nodes/s{}",
        secs,
        nodes as f64 / secs.max(1e-9) / 1e6,
        if bulk {
            " (bulk counting at the last ply)"
        } else {
            ""
        }
    );
    Ok(ExitCode::SUCCESS)
}
