//! The composer's workbench behind `kyozume solve`: reading problems in the formats composers
//! use, solving them with solution counting, and reporting for people or scripts, one problem or
//! a whole file of them.

pub mod batch;

use crate::problem::{self as input, Format, InputError, Length};
use crate::report::{Report, Status};
use crate::search::{self, Limits, Solver};
use crate::shogi::{Position, Stipulation};
use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Exit status of `kyozume solve` for one problem.
pub mod exit {
    pub const SOLVED: u8 = 0;
    pub const NO_MATE: u8 = 1;
    pub const BAD_INPUT: u8 = 2;
    pub const UNSOLVED: u8 = 3;
    /// The answer could not be written (stdout closed, e.g. piped into `head`, or a full disk).
    pub const OUTPUT_LOST: u8 = 4;
    /// A batch stopped by Ctrl-C (after writing what it had).
    pub const INTERRUPTED: u8 = 130;
}

#[derive(Clone, Debug, Default)]
pub struct SolveOptions {
    pub time_limit: Option<Duration>,
    /// The option values (engine.toml's, with the command line's over them): memory, threads,
    /// solutions to count (1: no uniqueness check), disk. Their stipulation and `MaxPlies` are
    /// taken as `stipulation` and `length` below, which a problem's file may stand over.
    pub engine: crate::config::EngineConfig,
    /// Problems solved at once by `--batch` (each with its share of the memory).
    pub jobs: usize,
    pub json: bool,
    pub format: Format,
    /// `--probe`: after solving, what the engine knows about this position (an SFEN, a
    /// `position ...` string, or USI moves from the problem).
    pub probe: Option<String>,
    /// `--output`: the solution as a game record instead of the report.
    pub output: Option<crate::report::RecordFormat>,
    /// `--levels`: print each breadth-first level's figures on stderr.
    pub levels: bool,
    /// Checkpoints of the breadth-first pass (`--checkpoint`, `--resume`).
    pub checkpoint: Option<crate::search::Checkpointing>,
    /// Where the figures go: `solve_one` sets it up when `levels` is on (leave it `None`).
    pub level_log: Option<crossbeam_channel::Sender<crate::search::LevelStats>>,
    /// What the problems ask for, unless a problem names its own (see `stipulation_given`).
    pub stipulation: Stipulation,
    /// The stipulation was given on the command line: it stands over what a file names.
    pub stipulation_given: bool,
    /// `--distributed`: this process's rank of the job's (only rank 0 prints the report).
    pub ranks: Option<crate::search::Ranks>,
    /// How long the solutions looked for may be, unless a problem states its own length (see
    /// `length_given`): `--max-plies`, `--plies`, or `MaxPlies` from engine.toml.
    pub length: Option<Length>,
    /// The length was given on the command line: it stands over what a file states.
    pub length_given: bool,
}

impl SolveOptions {
    fn limits(&self, stipulation: Stipulation, length: Option<Length>) -> Limits {
        Limits {
            max_plies: length.map(Length::plies),
            solution_limit: self.solution_limit(length),
            level_log: self.level_log.clone(),
            checkpoint: self.checkpoint.clone(),
            ranks: self.ranks.clone(),
            ..self.engine.limits(stipulation, self.time_limit)
        }
    }

    /// Solutions to count: a stated length needs at least two (is the solution unique?).
    fn solution_limit(&self, length: Option<Length>) -> usize {
        match length {
            Some(Length::Stated(_)) => self.engine.solution_limit.max(2),
            _ => self.engine.solution_limit,
        }
    }

    /// The bound for a problem that states `named` plies (a file's, a batch line's), if any:
    /// the command line's stands over it, which stands over engine.toml's `MaxPlies`.
    pub fn length_for(&self, named: Option<u32>) -> Option<Length> {
        match named {
            Some(n) if !self.length_given => Some(Length::Stated(n)),
            _ => self.length,
        }
    }

    /// The stipulation for a problem that names `named` (a file's, a batch line's), if any.
    pub fn stipulation_for(&self, named: Option<Stipulation>) -> Stipulation {
        match named {
            Some(s) if !self.stipulation_given => s,
            _ => self.stipulation,
        }
    }
}

/// A level log that prints each breadth-first level as a tab-separated line on stderr, from a
/// thread of its own, which ends when every sender is dropped.
fn print_levels() -> (
    crossbeam_channel::Sender<crate::search::LevelStats>,
    std::thread::JoinHandle<()>,
) {
    let (sender, receiver) = crossbeam_channel::unbounded::<crate::search::LevelStats>();
    let printer = std::thread::spawn(move || {
        const MB: f64 = (1 << 20) as f64;
        let gap_names: Vec<String> = (0..crate::search::GAP_BUCKETS)
            .map(|b| format!("gap{}", crate::search::bucket_floor(b)))
            .collect();
        eprintln!(
            "level\tplies\tpositions\tkeys\tkeys_MB\tlinks_MB\ttotal_MB\tseconds\tdisk_MB\tnodes\tchecks\t{}\tghosts\tcheckpoint_s\tcheckpoint_MB\texchanged_MB",
            gap_names.join("\t")
        );
        for (i, l) in receiver.iter().enumerate() {
            let gaps: Vec<String> = l.gaps.iter().map(u64::to_string).collect();
            eprintln!(
                "{}\t{}\t{}\t{}\t{:.1}\t{:.1}\t{:.1}\t{:.3}\t{:.1}\t{}\t{}\t{}\t{}\t{:.3}\t{:.1}\t{:.1}",
                i + 1,
                l.plies,
                l.positions,
                l.keys,
                l.key_bytes as f64 / MB,
                l.graph_bytes as f64 / MB,
                l.bytes as f64 / MB,
                l.elapsed.as_secs_f64(),
                l.disk_bytes as f64 / MB,
                l.nodes,
                l.checks.map_or("-".to_string(), |c| c.to_string()),
                gaps.join("\t"),
                l.ghosts,
                l.checkpoints.0.as_secs_f64(),
                l.checkpoints.1 as f64 / MB,
                l.exchanged as f64 / MB,
            );
        }
    });
    (sender, printer)
}

/// The problem text: the argument itself, or the file it names, or stdin (`-` or nothing).
pub fn read_input(arg: Option<&str>) -> std::io::Result<String> {
    match arg {
        None | Some("-") => {
            if std::io::stdin().is_terminal() {
                // Otherwise the command would seem to hang.
                eprintln!("kyozume: reading the problem from the terminal (end it with Ctrl-D)");
            }
            let mut bytes = Vec::new();
            std::io::stdin().read_to_end(&mut bytes)?;
            Ok(input::decode(&bytes))
        }
        // A problem's text has spaces (an SFEN has three or four fields): one word names a
        // file, and one that cannot be read is said as such, not as a bad SFEN.
        Some(a) if a.trim().is_empty() => Ok(String::new()),
        Some(a) if Path::new(a).is_file() || !a.trim().contains(char::is_whitespace) => {
            std::fs::read(a)
                .map(|bytes| input::decode(&bytes))
                .map_err(|e| std::io::Error::new(e.kind(), format!("{a}: {e}")))
        }
        Some(a) => Ok(a.to_string()),
    }
}

/// A flag raised by Ctrl-C (the first press stops the search; the second exits at once).
pub fn interrupt_flag() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let handler_flag = Arc::clone(&flag);
    // Failing to install the handler only loses the graceful stop.
    let _ = ctrlc::set_handler(move || {
        if handler_flag.swap(true, Ordering::SeqCst) {
            std::process::exit(exit::INTERRUPTED as i32);
        }
    });
    flag
}

/// Solves one position under `stipulation` (within `length`, if set) and builds its report.
pub fn solve_position(
    solver: &mut Solver,
    name: Option<String>,
    problem: (&Position, Stipulation, Option<Length>),
    options: &SolveOptions,
    stop: &AtomicBool,
) -> Report {
    let limits = options.limits(problem.1, problem.2);
    crate::report::answer(solver, name, problem, &limits, stop, &mut |_| {})
}

fn exit_code(status: Status) -> u8 {
    match status {
        Status::Mate => exit::SOLVED,
        Status::NoMate => exit::NO_MATE,
        Status::Unsolved => exit::UNSOLVED,
        Status::Error => exit::BAD_INPUT,
    }
}

/// `kyozume solve` for one problem: prints the report and returns the exit status.
pub fn solve_one(text: &str, options: &SolveOptions) -> u8 {
    let mut options = options.clone();
    let printer = (options.levels && prints(&options)).then(|| {
        let (sender, printer) = print_levels();
        options.level_log = Some(sender);
        printer
    });
    let status = solve_text(text, &options);
    // The last levels printed before the answer's exit.
    drop(options);
    if let Some(printer) = printer {
        let _ = printer.join();
    }
    status
}

/// With `--distributed`, whether every rank got as far as this one (`ready`) or this one did
/// not: a rank that ended alone would leave the others waiting for it for ever. Every rank
/// calls it at the same steps. True without ranks.
pub fn all_ranks_ready(options: &SolveOptions, ready: bool) -> bool {
    options
        .ranks
        .as_ref()
        .is_none_or(|ranks| ranks.0.max(u64::from(!ready)) == 0)
}

/// Whether this process prints the report: the only one, or rank 0 of the job's.
fn prints(options: &SolveOptions) -> bool {
    options
        .ranks
        .as_ref()
        .is_none_or(|ranks| ranks.0.rank() == 0)
}

fn solve_text(text: &str, options: &SolveOptions) -> u8 {
    let chosen = input::parse_problem_and_stipulation(text, options.format, |named| {
        options.stipulation_for(named)
    });
    let read = all_ranks_ready(options, chosen.is_ok());
    let ((position, stipulation), length) = match chosen {
        Ok(_) if !read => {
            eprintln!(
                "kyozume solve: another rank could not read the problem (under MPI only rank 0 \
                 reads stdin: give the problem as an argument or a file)"
            );
            return exit::BAD_INPUT;
        }
        Ok(p) => (
            p,
            options.length_for(input::named_length(text, options.format)),
        ),
        Err(_) if !prints(options) => return exit::BAD_INPUT,
        Err(e) => return report_input_error(text, &e, options),
    };
    if let Some(e) = Length::error(length, stipulation) {
        if prints(options) {
            eprintln!("kyozume solve: {e}");
        }
        return exit::BAD_INPUT;
    }
    let solver = solver_for(options, "kyozume solve");
    if !all_ranks_ready(options, solver.is_ok()) {
        if solver.is_ok() && prints(options) {
            eprintln!("kyozume solve: another rank could not start");
        }
        return exit::BAD_INPUT;
    }
    let mut solver = match solver {
        Ok(s) => s,
        Err(status) => return status,
    };
    let target = match options
        .probe
        .as_deref()
        .map(|t| input::position_of_problem(&position, t, stipulation.rules()))
    {
        Some(Err(e)) => {
            eprintln!("kyozume solve: --probe: {e}");
            return exit::BAD_INPUT;
        }
        Some(Ok(target)) => Some(target),
        None => None,
    };
    let stop = interrupt_flag();
    let report = search::with_search_stack(|| {
        let mut report = solve_position(
            &mut solver,
            None,
            (&position, stipulation, length),
            options,
            &stop,
        );
        if let Some(target) = &target {
            let problem = (stipulation.attacker(position.side_to_move()), stipulation);
            let probed = solver.probe(target, problem, PROBE_TIME, &stop);
            report.probe = Some(probed.lines(target, stipulation));
        }
        report
    });
    if !prints(options) {
        return exit_code(report.status);
    }
    if report.status == Status::Error {
        // Like every other error, on stderr (with --json, the JSON object still goes to stdout).
        eprintln!(
            "kyozume solve: {}",
            report.error.as_deref().unwrap_or("bad input")
        );
        if !options.json {
            return exit::BAD_INPUT;
        }
    }
    let text = match options.output.and_then(|format| report.record(format)) {
        Some(record) => record,
        None if options.json => format!("{}\n", report.json()),
        None => report.human(),
    };
    match write_stdout(&text, "kyozume solve") {
        Ok(()) => exit_code(report.status),
        Err(status) => status,
    }
}

/// Writes `text` to stdout for `command`. A closed stdout (the reader gone, as in `| head`) is
/// not a crash: it is said on stderr once and ends the command with `exit::OUTPUT_LOST`.
pub fn write_stdout(text: &str, command: &str) -> Result<(), u8> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| {
            eprintln!("{command}: cannot write the answer: {e}");
            exit::OUTPUT_LOST
        })
}

/// How long `--probe` searches for the shortest line from the position asked about.
const PROBE_TIME: Duration = Duration::from_secs(5);

/// The solver for `options`, or (having said why on stderr as `command`) the exit status.
fn solver_for(options: &SolveOptions, command: &str) -> Result<Solver, u8> {
    Solver::new_lazy(options.engine.hash_mb).map_err(|e| {
        eprintln!("{command}: {e}");
        exit::BAD_INPUT
    })
}

fn report_input_error(text: &str, e: &InputError, options: &SolveOptions) -> u8 {
    eprintln!("kyozume solve: {e}");
    if options.json {
        let line = format!(
            "{}\n",
            Report::input_error(None, text, e.to_string()).json()
        );
        if let Err(status) = write_stdout(&line, "kyozume solve") {
            return status;
        }
    }
    exit::BAD_INPUT
}
