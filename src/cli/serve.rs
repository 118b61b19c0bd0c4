//! `kyozume serve`: the web page on this machine.

use super::{bad_input, HASH_MB_RANGE};
use crate::config::EngineConfig;
use crate::serve::{self, ServeOptions};
use clap::Args;
use std::net::IpAddr;
use std::process::ExitCode;

const COMMAND: &str = "kyozume serve";

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The port to listen on (0: any free port; the address is printed).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// The address to listen on. The page has no login: anyone who can reach it can use
    /// the engine, so it listens on this machine only unless told (0.0.0.0: every network).
    #[arg(long, value_name = "ADDRESS", default_value = "127.0.0.1")]
    pub listen: IpAddr,
    /// Open the page in the default browser once the server listens.
    #[arg(long)]
    pub open: bool,
    /// Memory for the search in MB (default: USI_Hash from engine.toml).
    #[arg(long, value_name = "MB", value_parser = clap::value_parser!(u64).range(HASH_MB_RANGE))]
    pub hash: Option<u64>,
    /// Search threads (default: Threads from engine.toml, else the machine's cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: Option<u16>,
}

/// Serves until Ctrl-C; an error (exit 2) when the address or the memory cannot be had.
pub fn run(args: &ServeArgs, mut engine: EngineConfig) -> Result<ExitCode, ExitCode> {
    engine.hash_mb = args.hash.map_or(engine.hash_mb, |mb| mb as usize);
    engine.threads = args.threads.map_or(engine.threads, usize::from);
    let options = ServeOptions {
        listen: args.listen,
        port: args.port,
        engine,
    };
    let open = args.open;
    serve::run(options, |address| {
        let url = format!("http://{address}/");
        println!("kyozume serve: {url} (Ctrl-C ends it)");
        if open {
            if let Err(e) = opener::open_browser(&url) {
                eprintln!("{COMMAND}: cannot open a browser ({e}); open {url}");
            }
        }
    })
    .map_err(|e| bad_input(COMMAND, e))?;
    Ok(ExitCode::SUCCESS)
}
