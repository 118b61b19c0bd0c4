//! The `kyozume` binary: with no arguments a USI engine, otherwise a command-line tool.

use clap::{Parser, Subcommand};
use kyozume::shogi::perft::{divide, perft};
use kyozume::shogi::Position;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "kyozume",
    version,
    about = "Shogi helpmate (協力詰) solver and USI engine"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
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
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        None => {
            eprintln!("kyozume: the USI engine is not built yet; try `kyozume perft 5`");
            ExitCode::FAILURE
        }
        Some(Command::Perft {
            depth,
            sfen,
            divide: per_move,
            no_bulk,
        }) => run_perft(depth, sfen.as_deref(), per_move, !no_bulk),
    }
}

fn run_perft(depth: u32, sfen: Option<&str>, per_move: bool, bulk: bool) -> ExitCode {
    let mut pos = match sfen {
        None => Position::startpos(),
        Some(s) => match Position::from_sfen(s) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("kyozume perft: invalid --sfen: {e}");
                return ExitCode::from(2);
            }
        },
    };
    let start = Instant::now();
    let nodes = if per_move && depth > 0 {
        let parts = divide(&mut pos, depth, bulk);
        for (m, n) in &parts {
            println!("{m}: {n}");
        }
        parts.iter().map(|(_, n)| n).sum()
    } else {
        perft(&mut pos, depth, bulk)
    };
    let secs = start.elapsed().as_secs_f64();
    println!("Nodes searched: {nodes}");
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
    ExitCode::SUCCESS
}
