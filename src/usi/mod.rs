//! The USI front end: a loop thread that reads commands and a search thread that owns the
//! solver.
//!
//! Commands take effect in the order they arrive. The loop thread parses each line at once and
//! keeps the position and options; everything that produces output or needs the solver goes
//! to the search thread as a job, in arrival order, so a `go` sent while another search runs
//! waits for it, and every reply (errors included) comes out in the order of the commands.
//! Only `stop`, `quit` and `isready` during a search act at once. At the end of input the
//! queued work is finished before the engine exits, unless nobody reads the output any more.

pub mod command;
pub mod options;
mod output;
mod search_thread;
mod session;
mod shared;
mod words;

pub use output::Output;

use crate::config::EngineConfig;
use crate::search;
use crate::shogi::Position;
use crossbeam_channel::{unbounded, Receiver, Sender};
use output::error_line;
use parking_lot::Mutex;
use search_thread::{search_loop, Job};
use session::Session;
use shared::{Searches, Shared};
use std::io::BufRead;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub const ENGINE_NAME: &str = "kyozume";
pub const ENGINE_AUTHOR: &str = "the kyozume developers";

/// Ends an engine from outside its input (a signal handler): the running search stops and
/// answers, queued work is dropped, and `wait` returns once the search thread is gone.
#[derive(Clone)]
pub struct Interrupt {
    shared: Arc<Shared>,
    jobs: Sender<Job>,
    finished: Receiver<()>,
}

impl Interrupt {
    pub fn interrupt(&self) {
        self.shared.interrupted.store(true, Ordering::SeqCst);
        self.shared.quit_now();
        let _ = self.jobs.send(Job::Quit);
    }

    /// Waits (at most `limit`) for the search thread to end after `interrupt`.
    pub fn wait(&self, limit: Duration) {
        let _ = self.finished.recv_timeout(limit);
    }
}

/// Runs the engine until `quit` or the end of input. Returns the process exit status: 0, or
/// [`INTERRUPTED_STATUS`] after [`Interrupt::interrupt`].
/// `on_start` receives a handle that ends the engine from elsewhere (the binary installs it as
/// the SIGINT / SIGTERM handler).
pub fn run(
    config: EngineConfig,
    input: impl BufRead + Send + 'static,
    out: Output,
    on_start: impl FnOnce(Interrupt),
) -> i32 {
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        stop_through: AtomicU64::new(0),
        quitting: AtomicBool::new(false),
        interrupted: AtomicBool::new(false),
        searches: Mutex::new(Searches::default()),
    });
    let (jobs, job_rx) = unbounded::<Job>();
    let (finished_tx, finished) = crossbeam_channel::bounded::<()>(1);
    let search_thread = {
        let shared = Arc::clone(&shared);
        let out = out.clone();
        let hash_mb = config.hash_mb;
        std::thread::Builder::new()
            .name("search".into())
            .stack_size(search::SEARCH_STACK_BYTES)
            .spawn(move || {
                search_loop(job_rx, &shared, &out, hash_mb);
                drop(finished_tx);
            })
            .expect("spawn the search thread")
    };
    on_start(Interrupt {
        shared: Arc::clone(&shared),
        jobs: jobs.clone(),
        finished: finished.clone(),
    });
    let mut session = Session {
        config,
        position: Position::startpos(),
        shared: Arc::clone(&shared),
        jobs: jobs.clone(),
        out: out.clone(),
        gos_sent: 0,
    };
    // Lines are read on their own thread, so that the engine can end while a read blocks
    // (the search thread ends first when the output is gone or on a signal).
    let (line_tx, lines) = unbounded::<std::io::Result<String>>();
    std::thread::Builder::new()
        .name("input".into())
        .spawn(move || {
            for line in input.lines() {
                if line_tx.send(line).is_err() {
                    break;
                }
            }
        })
        .expect("spawn the input thread");
    loop {
        let line = crossbeam_channel::select! {
            recv(lines) -> line => line,
            recv(finished) -> _ => break,
        };
        let line = match line {
            Ok(Ok(l)) => l,
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
                // Not UTF-8: report and keep reading.
                session.reply(vec![error_line("input line is not valid UTF-8")]);
                continue;
            }
            // The end of input, or a read error.
            Ok(Err(_)) | Err(_) => break,
        };
        if !session.handle(&line) || out.is_broken() {
            shared.quit_now();
            break;
        }
    }
    // The end of input finishes what was asked for, as long as someone reads the answers: the
    // queue runs out, then the thread ends. When the reader is gone too (the GUI ended or
    // died), everything stops at once.
    let _ = jobs.send(Job::Quit);
    use crossbeam_channel::RecvTimeoutError::Timeout;
    while let Err(Timeout) = finished.recv_timeout(READER_CHECK_INTERVAL) {
        if out.reader_gone() {
            shared.quit_now();
        }
    }
    let _ = search_thread.join();
    if shared.interrupted.load(Ordering::SeqCst) {
        INTERRUPTED_STATUS
    } else {
        0
    }
}

/// How often, once the input has ended, the engine checks whether its output is still read.
const READER_CHECK_INTERVAL: Duration = Duration::from_millis(10);

/// The exit status after SIGINT or SIGTERM (128 + SIGINT, as shells report an interrupt).
pub const INTERRUPTED_STATUS: i32 = 130;
