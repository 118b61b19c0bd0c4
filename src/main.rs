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
    /// Read default option values from this file instead of engine.toml.
    #[arg(long, global = true, value_name = "PATH")]
    config: Option<std::path::PathBuf>,
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
    /// Solve the benchmark suite and report nodes, time and nodes/s (how speed is measured).
    Bench {
        /// The long problems (1,000+ plies) instead of the default short and medium ones.
        #[arg(long)]
        long: bool,
        /// Transposition table size in MB.
        #[arg(long, default_value_t = 1024)]
        hash: usize,
        /// Give up a problem after this many seconds.
        #[arg(long, value_name = "SECONDS")]
        time_limit: Option<f64>,
        /// Only problems whose name contains this text.
        #[arg(long)]
        filter: Option<String>,
    },
    /// Solve one helpmate given as SFEN.
    Solve {
        sfen: String,
        #[arg(long, default_value_t = 256)]
        hash: usize,
        #[arg(long)]
        time_limit: Option<f64>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        None => {
            let config = match kyozume::config::EngineConfig::load(cli.config.as_deref()) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("kyozume: {e}");
                    return ExitCode::from(2);
                }
            };
            let stdin = std::io::stdin();
            let status = kyozume::usi::run(config, stdin.lock(), kyozume::usi::Output::stdout());
            ExitCode::from(status as u8)
        }
        Some(Command::Perft {
            depth,
            sfen,
            divide: per_move,
            no_bulk,
        }) => run_perft(depth, sfen.as_deref(), per_move, !no_bulk),
        Some(Command::Bench {
            long,
            hash,
            time_limit,
            filter,
        }) => {
            let options = kyozume::bench::BenchOptions {
                long,
                hash_mb: hash,
                time_limit: time_limit.map(std::time::Duration::from_secs_f64),
                filter,
            };
            let result = kyozume::search::with_search_stack(|| {
                kyozume::bench::run(&options, &mut std::io::stdout())
            });
            match result {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => {
                    eprintln!("kyozume bench: some answers were wrong");
                    ExitCode::FAILURE
                }
                Err(e) => {
                    eprintln!("kyozume bench: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Some(Command::Solve {
            sfen,
            hash,
            time_limit,
        }) => run_solve(&sfen, hash, time_limit),
    }
}

fn run_solve(sfen: &str, hash: usize, time_limit: Option<f64>) -> ExitCode {
    use kyozume::search::{with_search_stack, Limits, Outcome, Solver};
    use std::sync::atomic::AtomicBool;
    let pos = match Position::from_sfen(sfen) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("kyozume solve: invalid SFEN: {e}");
            return ExitCode::from(2);
        }
    };
    let stop = AtomicBool::new(false);
    let limits = Limits {
        time: time_limit.map(std::time::Duration::from_secs_f64),
        max_plies: None,
        ..Default::default()
    };
    let result = with_search_stack(|| {
        let mut solver = Solver::new(hash).expect("hash");
        solver.solve(&pos, &limits, &stop, &mut |p| {
            eprintln!(
                "depth {} lb {} nodes {} nps {} hashfull {} time {:?}",
                p.depth,
                p.lower_bound,
                p.nodes,
                p.nps(),
                p.hashfull,
                p.elapsed
            )
        })
    });
    match result {
        Err(e) => {
            eprintln!("kyozume solve: {e}");
            ExitCode::from(2)
        }
        Ok(r) => {
            match &r.outcome {
                Outcome::Mate(line) => {
                    let moves: Vec<String> = line.iter().map(|m| m.to_string()).collect();
                    println!("mate {} {}", line.len(), moves.join(" "));
                }
                Outcome::NoMate => println!("nomate"),
                Outcome::Unknown { lower_bound } => println!("unknown lb {lower_bound}"),
            }
            eprintln!("nodes {} time {:?}", r.nodes, r.elapsed);
            ExitCode::SUCCESS
        }
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
