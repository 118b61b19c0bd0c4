//! `kyozume` with no command: the USI engine on stdin and stdout.

use crate::config::EngineConfig;
use crate::usi;
use std::process::ExitCode;
use std::time::Duration;

/// Runs the engine until `quit`, the end of input or a signal.
pub fn run(config: EngineConfig) -> Result<ExitCode, ExitCode> {
    let stdin = std::io::BufReader::new(std::io::stdin());
    let status = usi::run(config, stdin, usi::Output::stdout(), |engine| {
        // SIGINT / SIGTERM: the running search stops and answers, queued work is dropped, and
        // the process ends (stdin may still be open, so the input loop cannot be relied on to
        // notice).
        let _ = ctrlc::set_handler(move || {
            engine.interrupt();
            engine.wait(Duration::from_secs(2));
            std::process::exit(usi::INTERRUPTED_STATUS);
        });
    });
    Ok(ExitCode::from(status as u8))
}
