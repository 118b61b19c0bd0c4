//! `kyozume serve`: a local web page for setting up, solving and replaying problems under their
//! rules, and the small JSON API behind it (`docs/serve.md`).
//!
//! A third front end beside `usi` and `workbench`, and their peer: it reads problems through
//! `problem`, solves them with `search` and answers with `report`'s objects, and imports
//! neither of the others. The page ships inside the binary (`page/`); the server is axum on a
//! one-thread tokio runtime, and the search runs on a thread of its own (`engine.rs`), one
//! problem at a time.

mod api;
mod engine;
mod page;

#[doc(hidden)]
pub use api::read_requests;

use crate::config::EngineConfig;
use std::net::{IpAddr, SocketAddr};

/// How `kyozume serve` listens and solves.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// The address to listen on (127.0.0.1 unless told: the page is for this machine).
    pub listen: IpAddr,
    /// The port (0: any free one, as said when listening).
    pub port: u16,
    /// The option values the problems are solved with (engine.toml's, with the command line's
    /// over them): memory, threads, solutions to count by default.
    pub engine: EngineConfig,
}

/// The largest request the API reads (bigger ones answer 400 without being read further).
pub const MAX_BODY_BYTES: usize = 256 * 1024;

/// Serves until the process ends. `listening` is told the address once the server accepts
/// connections. An error when the address cannot be had or the table's memory cannot.
pub fn run(options: ServeOptions, listening: impl FnOnce(SocketAddr)) -> Result<(), String> {
    let engine = engine::Engine::start(&options.engine)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the server: {e}"))?;
    runtime.block_on(async move {
        let address = SocketAddr::new(options.listen, options.port);
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|e| format!("cannot listen on {address}: {e}"))?;
        let bound = listener
            .local_addr()
            .map_err(|e| format!("cannot listen on {address}: {e}"))?;
        let app = api::router(engine, options.engine);
        listening(bound);
        axum::serve(listener, app)
            .await
            .map_err(|e| format!("the server stopped: {e}"))
    })
}
