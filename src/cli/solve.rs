//! `kyozume solve`: the command line's arguments made into the workbench's options (over
//! engine.toml's values), then one problem or a batch solved.

use super::{bad_input, seconds, HASH_MB_RANGE, SOLUTIONS_RANGE};
use crate::config::EngineConfig;
use crate::problem::Format;
use crate::problem::Length;
use crate::search::{CheckpointStart, Checkpointing};
use crate::shogi::{Goal, Stipulation};
use crate::workbench::{self, SolveOptions};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const COMMAND: &str = "kyozume solve";

#[derive(clap::Args)]
pub struct SolveArgs {
    /// The problem: an SFEN, a `position ...` string, or a file holding an SFEN, a BOD
    /// diagram or a KIF file (UTF-8 or Shift_JIS); `-` or nothing reads stdin.
    pub input: Option<String>,
    /// Input format (default: detected from the text).
    #[arg(long, value_enum, default_value = "auto")]
    pub format: Format,
    /// Give up a problem after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub time_limit: Option<f64>,
    /// Memory for the search in MB: the table, helper threads and breadth-first pass all fit
    /// in it; the process stays within it + 64 MB + 64 MB a thread (default: USI_Hash from
    /// engine.toml).
    #[arg(long, value_name = "MB", value_parser = clap::value_parser!(u64).range(HASH_MB_RANGE))]
    pub hash: Option<u64>,
    /// Count shortest solutions up to N (1 to 1000); 1 skips the uniqueness check (default:
    /// SolutionLimit from engine.toml).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(SOLUTIONS_RANGE))]
    pub solutions: Option<u16>,
    /// One JSON object per problem, one line each.
    #[arg(long)]
    pub json: bool,
    /// Solve every problem in FILE (one a line: SFEN, or name<TAB>SFEN[<TAB>stipulation]).
    #[arg(long, value_name = "FILE", conflicts_with = "input")]
    pub batch: Option<String>,
    /// Search threads for each problem (default: Threads from engine.toml, else the
    /// machine's logical cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: Option<u16>,
    /// With --batch: solve N problems at once, each with 1/N of the memory (results still
    /// in input order).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub jobs: Option<u16>,
    /// After solving, show what the engine knows about a position of the problem: its
    /// table entry, the bounds of its moves and the shortest line from it. POSITION is an
    /// SFEN, a `position ...` string, or USI moves played from the problem.
    #[arg(long, value_name = "POSITION", conflicts_with = "batch")]
    pub probe: Option<String>,
    /// Print the solution as a game record GUIs read (KIF, KI2 or CSA) instead of the
    /// report (when there is no solution, the report as usual).
    #[arg(long, value_enum, conflicts_with_all = ["batch", "json", "probe"])]
    pub output: Option<crate::report::RecordFormat>,
    /// Print the figures of each breadth-first level on stderr as it finishes (plies,
    /// positions, keys kept, memory, time, moves played, the level's checks, the positions
    /// met again by how many levels after they were first kept and the positions searched
    /// again after being let go of, both estimated from a sample of 1 key in 1,024, and the
    /// checkpoints' seconds and MB): where a long problem's memory goes.
    #[arg(long, conflicts_with = "batch")]
    pub levels: bool,
    /// Where a breadth-first pass that outgrows the memory writes its temporary file
    /// (default: TempDir from engine.toml, else the system's temporary directory).
    #[arg(long, value_name = "DIR")]
    pub temp_dir: Option<PathBuf>,
    /// MB that pass may write there; 0 never uses the disk (default: DiskCap from
    /// engine.toml, else 65536).
    #[arg(long, value_name = "MB")]
    pub disk_cap: Option<usize>,
    /// Write checkpoints of a long problem's breadth-first pass into DIR (made if missing;
    /// each problem in a directory of its own), so that a run stopped by a reboot, Ctrl-C or
    /// a killed job can go on with --resume DIR (default: CheckpointDir from engine.toml).
    /// A checkpoint is removed once its problem is answered.
    #[arg(long, value_name = "DIR", conflicts_with = "resume")]
    pub checkpoint: Option<PathBuf>,
    /// Minutes between two checkpoints, fractions allowed; 0 writes one at every level
    /// (default: CheckpointMinutes from engine.toml, else 10).
    #[arg(long, value_name = "MINUTES")]
    pub checkpoint_every: Option<f64>,
    /// Go on from the problem's checkpoint in DIR (written by --checkpoint DIR), writing
    /// further checkpoints there. With --batch, problems without one start afresh.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// Share the breadth-first pass among the processes of an MPI job (`mpirun -np P
    /// kyozume solve --distributed ...`): each keeps its share of the positions within
    /// --hash and expands them with --threads threads; rank 0 prints the answer (with
    /// --batch, the problems are taken one at a time; with --checkpoint, each rank keeps
    /// its own, and --resume needs as many ranks). Needs a build with `--features mpi`.
    #[arg(long, conflicts_with_all = ["jobs", "probe"])]
    pub distributed: bool,
    /// What the problem asks for: H# (ばか詰, the default) or HS# (協力自玉詰: the
    /// defender's last move mates the attacker). Stands over what a file names.
    #[arg(long, value_name = "H#|HS#", value_parser = parse_goal)]
    pub stipulation: Option<Goal>,
    /// 受先: the side to move is the defender and moves first.
    #[arg(long)]
    pub defender_first: bool,
    /// The rules as composers write them: 協力詰, ばか詰, 協力自玉詰, ばか自殺詰,
    /// 偶数手ばか詰, 受先ばか詰, 受先協力自玉詰 (or H#, HS#), with the conditions
    /// before them (安南ばか詰, 受先対面打歩詰可協力自玉詰, キルケばか詰, PWC受先ばか詰,
    /// マドラシ, 禁欲) or the options' values (Annan, Circe, KMadrasi, Greedy, PawnDropMate:
    /// "Annan Circe HS#"). Conditions alone keep ばか詰. Stands over what a file names.
    #[arg(long, value_name = "TEXT", conflicts_with_all = ["stipulation", "defender_first"])]
    pub rules: Option<String>,
    /// Search only solutions of at most N plies: the shortest within N, or a proof that
    /// there is none within N ("nomate", exit 1). 0: no bound. Stands over what a file
    /// states and over MaxPlies from engine.toml.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=crate::config::MAX_MAX_PLIES as i64))]
    pub max_plies: Option<u32>,
    /// The stated length, as composers publish it ("協力自玉詰 9手"): searches within N
    /// plies and judges the answer against it: 完全 (sound: one solution of N plies, none
    /// shorter), 余詰 (cooked), 早詰 (short: a shorter one, given), 不詰 (none within N).
    /// Counts at least 2 solutions. Stands over a file's 手数＝N or N手.
    #[arg(long, value_name = "N", conflicts_with = "max_plies",
          value_parser = clap::value_parser!(u32).range(1..=crate::config::MAX_MAX_PLIES as i64))]
    pub plies: Option<u32>,
}

pub fn run(args: &SolveArgs, config: EngineConfig) -> Result<ExitCode, ExitCode> {
    if args.jobs.is_some() && args.batch.is_none() {
        return Err(bad_input(
            COMMAND,
            "--jobs needs --batch FILE (one problem uses --threads)",
        ));
    }
    let options = options(args, config)?;
    let (options, mpi) = match args.distributed {
        true => {
            let (ranks, mpi) = start_ranks()?;
            let ranks = Some(ranks);
            (SolveOptions { ranks, ..options }, Some(mpi))
        }
        false => (options, None),
    };
    let status = match &args.batch {
        Some(file) => workbench::batch::run(file, &options),
        // (Under MPI only rank 0 is given stdin: the others read nothing, and every rank then
        // ends, see `solve_one`.)
        None => match workbench::read_input(args.input.as_deref()) {
            Ok(text) => workbench::solve_one(&text, &options),
            Err(e) => {
                eprintln!("{COMMAND}: cannot read the input: {e}");
                workbench::all_ranks_ready(&options, false);
                workbench::exit::BAD_INPUT
            }
        },
    };
    drop(options);
    if let Some(mpi) = mpi {
        mpi.join();
    }
    Ok(ExitCode::from(status))
}

/// The workbench's options: the arguments over engine.toml's values.
fn options(args: &SolveArgs, mut engine: EngineConfig) -> Result<SolveOptions, ExitCode> {
    if let Some(dir) = &args.temp_dir {
        if !dir.is_dir() {
            let message = format!("--temp-dir {}: not a directory", dir.display());
            return Err(bad_input(COMMAND, message));
        }
        engine.temp_dir = Some(dir.clone());
    }
    engine.disk_cap_mb = args.disk_cap.unwrap_or(engine.disk_cap_mb);
    engine.hash_mb = args.hash.map_or(engine.hash_mb, |mb| mb as usize);
    engine.solution_limit = args.solutions.map_or(engine.solution_limit, usize::from);
    engine.threads = args.threads.map_or(engine.threads, usize::from);
    let checkpoint = checkpointing(args, &engine)?;
    let (given, rules_length) = stipulation(args, &engine)?;
    // The command line's bound (`--plies`, `--max-plies`, a length in `--rules`) stands over
    // a file's; engine.toml's `MaxPlies` is the default of both.
    let length_given = match (args.plies, args.max_plies, rules_length) {
        (Some(n), _, _) | (None, None, Some(n)) => Some(Some(Length::Stated(n))),
        (None, Some(0), _) => Some(None),
        (None, Some(n), _) => Some(Some(Length::AtMost(n))),
        (None, None, None) => None,
    };
    Ok(SolveOptions {
        time_limit: seconds(args.time_limit, COMMAND)?,
        jobs: args.jobs.map_or(1, usize::from),
        json: args.json,
        format: args.format,
        probe: args.probe.clone(),
        output: args.output,
        levels: args.levels,
        checkpoint,
        stipulation: given.unwrap_or(engine.stipulation()),
        stipulation_given: given.is_some(),
        length: length_given.unwrap_or(engine.max_plies().map(Length::AtMost)),
        length_given: length_given.is_some(),
        engine,
        ..Default::default()
    })
}

/// The stipulation the command line gives, if it gives one (`--rules`, or `--stipulation` /
/// `--defender-first` with engine.toml's conditions), and the length `--rules` states.
fn stipulation(
    args: &SolveArgs,
    engine: &EngineConfig,
) -> Result<(Option<Stipulation>, Option<u32>), ExitCode> {
    match &args.rules {
        Some(text) => match Stipulation::parse_stated(text) {
            Ok((s, n)) => Ok((Some(s), n)),
            Err(e) => Err(bad_input(COMMAND, format!("--rules: {e}"))),
        },
        None if args.stipulation.is_some() || args.defender_first => {
            let given = Stipulation {
                goal: args.stipulation.unwrap_or(engine.goal),
                defender_first: args.defender_first,
                conditions: engine.conditions(),
            };
            Ok((Some(given), None))
        }
        None => Ok((None, None)),
    }
}

/// `--stipulation`: H# or HS#.
fn parse_goal(text: &str) -> Result<Goal, String> {
    match Stipulation::parse(text) {
        Ok(s) if !s.defender_first => Ok(s.goal),
        Ok(_) => Err("the defender moving first is --defender-first".to_string()),
        Err(_) => Err(format!("'{text}' is not H# or HS#")),
    }
}

/// The checkpoints `kyozume solve` writes, from `--checkpoint`, `--checkpoint-every` and
/// `--resume` over `CheckpointDir` and `CheckpointMinutes`.
fn checkpointing(
    args: &SolveArgs,
    engine: &EngineConfig,
) -> Result<Option<Checkpointing>, ExitCode> {
    let default_every = Duration::from_secs(engine.checkpoint_minutes as u64 * 60);
    let every = match args.checkpoint_every {
        Some(m) if !(m >= 0.0 && m.is_finite() && m <= 1e6) => {
            let message = "--checkpoint-every must be a number of minutes, 0 or more";
            return Err(bad_input(COMMAND, message));
        }
        Some(m) => Duration::from_secs_f64(m * 60.0),
        None => default_every,
    };
    let batch = args.batch.is_some();
    let (dir, start) = match (&args.checkpoint, &args.resume) {
        (_, Some(dir)) if !dir.is_dir() => {
            let message = format!("--resume {}: not a directory", dir.display());
            return Err(bad_input(COMMAND, message));
        }
        (_, Some(dir)) if batch => (dir.clone(), CheckpointStart::Either),
        (_, Some(dir)) => (dir.clone(), CheckpointStart::Resume),
        (Some(dir), None) => {
            if let Err(e) = std::fs::create_dir_all(dir) {
                let message = format!("--checkpoint {}: {e}", dir.display());
                return Err(bad_input(COMMAND, message));
            }
            (dir.clone(), CheckpointStart::Fresh)
        }
        (None, None) => match &engine.checkpoint_dir {
            Some(dir) => (dir.clone(), CheckpointStart::Either),
            None if every != default_every => {
                let message = "--checkpoint-every needs --checkpoint DIR or --resume DIR";
                return Err(bad_input(COMMAND, message));
            }
            None => return Ok(None),
        },
    };
    Ok(Some(Checkpointing { dir, every, start }))
}

/// This process's rank of the MPI job it is a part of, and MPI's thread, to join at the end.
#[cfg(feature = "mpi")]
fn start_ranks() -> Result<(crate::search::Ranks, crate::search::MpiThread), ExitCode> {
    match crate::search::start_mpi() {
        Ok((rank, thread)) => Ok((crate::search::Ranks(std::sync::Arc::new(rank)), thread)),
        Err(e) => Err(bad_input(COMMAND, format!("--distributed: {e}"))),
    }
}

#[cfg(not(feature = "mpi"))]
fn start_ranks() -> Result<(crate::search::Ranks, NoMpi), ExitCode> {
    Err(bad_input(
        COMMAND,
        "--distributed: this kyozume was built without MPI \
         (build it with `cargo build --release --features mpi`, OpenMPI installed)",
    ))
}

/// What stands for MPI's thread in a build without MPI.
#[cfg(not(feature = "mpi"))]
struct NoMpi;

#[cfg(not(feature = "mpi"))]
impl NoMpi {
    fn join(self) {}
}
