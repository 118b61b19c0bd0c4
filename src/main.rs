//! The `kyozume` binary: with no arguments a USI engine, otherwise a command-line tool (see
//! `kyozume::cli`).

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    kyozume::search::tune_allocator();
    kyozume::cli::run(&kyozume::cli::Cli::parse())
}
