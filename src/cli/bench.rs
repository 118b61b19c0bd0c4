//! `kyozume bench`: solves the benchmark suite and reports the figures (how speed is measured;
//! never a timed test).

use super::{seconds, HASH_MB_RANGE, SOLUTIONS_RANGE};
use crate::bench::{BenchOptions, Group};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct BenchArgs {
    /// The long problems (1,000+ plies) instead of the default short and medium ones.
    #[arg(long, conflicts_with = "bushy")]
    pub long: bool,
    /// The bushy lone-king problems (11-17 plies) instead of the default ones.
    #[arg(long)]
    pub bushy: bool,
    /// Count shortest solutions up to N, as `SolutionLimit` (default 1: the length only).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i64).range(SOLUTIONS_RANGE))]
    pub solutions: Option<i64>,
    /// Memory for the search in MB (default 1024; 8192 with --long, which the 1001-ply
    /// problem needs).
    #[arg(long, value_name = "MB", value_parser = clap::value_parser!(u64).range(HASH_MB_RANGE))]
    pub hash: Option<u64>,
    /// Give up a problem after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub time_limit: Option<f64>,
    /// Only problems whose name contains this text (repeat it for several).
    #[arg(long)]
    pub filter: Vec<String>,
    /// Instead of solving: time the checks generator against filtering all legal moves.
    #[arg(long, conflicts_with_all = ["long", "bushy", "rounds"])]
    pub checks: bool,
    /// Search threads (default 1, so that figures compare across machines). Several, as
    /// `1,2`, compare them: each problem is solved at each count back to back (A, B, then
    /// B, A in the next round ...) for --rounds rounds, and each problem's median times and
    /// speed-ups are reported.
    #[arg(long, value_name = "N[,N...]", value_delimiter = ',',
          value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: Vec<u16>,
    /// Rounds of alternated runs (default 1; 5 when --threads lists several counts).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub rounds: Option<u16>,
    /// With --threads 1,2: each round also solves each problem twice at once at one thread
    /// (two solvers, each with --hash), to report what the machine gives two separate
    /// solves (the ceiling) and how near the two-thread solve comes to it (efficiency).
    #[arg(long)]
    pub pair: bool,
}

pub fn run(args: &BenchArgs) -> Result<ExitCode, ExitCode> {
    if args.checks {
        return run_checks();
    }
    let threads: Vec<usize> = if args.threads.is_empty() {
        vec![1]
    } else {
        args.threads.iter().map(|&t| usize::from(t)).collect()
    };
    let default_rounds = if threads.len() > 1 { 5 } else { 1 };
    let options = BenchOptions {
        rounds: args.rounds.map_or(default_rounds, usize::from),
        threads,
        group: match (args.long, args.bushy) {
            (true, _) => Group::Long,
            (_, true) => Group::Bushy,
            _ => Group::Default,
        },
        hash_mb: args
            .hash
            .map_or(if args.long { 8192 } else { 1024 }, |mb| mb as usize),
        solutions: args.solutions.map_or(1, |n| n as usize),
        time_limit: seconds(args.time_limit, "kyozume bench")?,
        filters: args.filter.clone(),
        pair: args.pair,
    };
    let result =
        crate::search::with_search_stack(|| crate::bench::run(&options, &mut std::io::stdout()));
    match result {
        Ok(true) => Ok(ExitCode::SUCCESS),
        Ok(false) => {
            eprintln!("kyozume bench: some answers were wrong");
            Ok(ExitCode::FAILURE)
        }
        Err(e) => Err(super::bad_input("kyozume bench", e)),
    }
}

/// `--checks`: the checks generator against filtering every legal move.
fn run_checks() -> Result<ExitCode, ExitCode> {
    match crate::bench::run_checks(&mut std::io::stdout()) {
        Ok(true) => Ok(ExitCode::SUCCESS),
        Ok(false) => {
            eprintln!(
                "kyozume bench --checks: the direct generator is not the faster, or the sets differ"
            );
            Ok(ExitCode::FAILURE)
        }
        Err(e) => Err(super::bad_input("kyozume bench", e)),
    }
}
