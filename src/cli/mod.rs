//! The command line: `kyozume` alone runs the USI engine; `solve`, `bench` and `perft` are the
//! tools for people and scripts, `serve` the web page. Each subcommand reads its arguments here and hands them to the
//! unit that does the work (`usi`, `workbench`, `serve`, `bench`, `shogi::perft`).

mod bench;
mod engine;
mod perft;
mod serve;
mod solve;

use crate::config::EngineConfig;
use clap::{Parser, Subcommand};
use std::process::ExitCode;
use std::time::Duration;

pub use bench::BenchArgs;
pub use perft::PerftArgs;
pub use serve::ServeArgs;
pub use solve::SolveArgs;

#[derive(Parser)]
#[command(
    name = "kyozume",
    version,
    about = "Shogi helpmate (協力詰) solver and USI engine. Without a command: the USI engine."
)]
pub struct Cli {
    /// Read default option values from this file instead of engine.toml.
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<std::path::PathBuf>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand)]
pub enum Command {
    /// Solve helpmates: shortest length, uniqueness, the solution in Japanese and USI.
    ///
    /// Exit status: 0 solved, 1 no helpmate (proven), 2 bad input, 3 not solved within the
    /// limits, 4 the answer could not be written; with --batch: 0 done, 130 interrupted by
    /// Ctrl-C.
    Solve(Box<SolveArgs>),
    /// Solve the benchmark suite and report nodes, time and nodes/s (how speed is measured).
    Bench(BenchArgs),
    /// Count the leaf nodes of the legal-move tree (move generator test and benchmark).
    Perft(PerftArgs),
    /// A web page on this machine: set up a problem on a board, solve it, replay the answer
    /// under its rules (http://127.0.0.1:8080/ unless told).
    Serve(ServeArgs),
}

/// Runs the command line `cli`: the process's exit status.
pub fn run(cli: &Cli) -> ExitCode {
    let config = match EngineConfig::load(cli.config.as_deref()) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("kyozume: {e}");
            return ExitCode::from(BAD_INPUT);
        }
    };
    let status = match &cli.command {
        None => engine::run(config),
        Some(Command::Solve(args)) => solve::run(args, config),
        Some(Command::Bench(args)) => bench::run(args),
        Some(Command::Perft(args)) => perft::run(args),
        Some(Command::Serve(args)) => serve::run(args, config),
    };
    match status {
        Ok(code) | Err(code) => code,
    }
}

/// The exit status of a command given bad input (every subcommand's).
const BAD_INPUT: u8 = crate::workbench::exit::BAD_INPUT;

/// Says `message` on stderr as `command` and gives the bad-input exit status.
fn bad_input(command: &str, message: impl std::fmt::Display) -> ExitCode {
    eprintln!("{command}: {message}");
    ExitCode::from(BAD_INPUT)
}

/// `--time-limit`: a positive number of seconds.
fn seconds(value: Option<f64>, command: &str) -> Result<Option<Duration>, ExitCode> {
    match value {
        Some(t) if !(t > 0.0 && t.is_finite()) => Err(bad_input(
            command,
            "--time-limit must be a positive number of seconds",
        )),
        t => Ok(t.map(Duration::from_secs_f64)),
    }
}

/// `--hash`: the `USI_Hash` range.
const HASH_MB_RANGE: std::ops::RangeInclusive<u64> = 1..=crate::config::MAX_HASH_MB as u64;
/// `--solutions`: the `SolutionLimit` range.
const SOLUTIONS_RANGE: std::ops::RangeInclusive<i64> = 1..=crate::config::MAX_SOLUTION_LIMIT as i64;
