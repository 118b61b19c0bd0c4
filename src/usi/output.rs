//! Where the engine's protocol lines go, whole and in order, and how a line is kept to one line
//! of ASCII.

use parking_lot::Mutex;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Where protocol lines go: each line is written whole and flushed at once, so lines from the
/// two threads never interleave.
#[derive(Clone)]
pub struct Output {
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    /// Set when a write fails: the reader is gone and the engine ends quietly.
    broken: Arc<AtomicBool>,
    /// Tells, without writing, whether the reader is gone (see `reader_gone`).
    probe: Option<fn() -> bool>,
}

impl Output {
    pub fn stdout() -> Output {
        Output {
            probe: Some(stdout_reader_gone),
            ..Output::new(Box::new(std::io::stdout()))
        }
    }

    pub fn new(w: Box<dyn Write + Send>) -> Output {
        Output {
            writer: Arc::new(Mutex::new(w)),
            broken: Arc::new(AtomicBool::new(false)),
            probe: None,
        }
    }

    pub fn line(&self, text: &str) {
        let mut w = self.writer.lock();
        if writeln!(w, "{text}").and_then(|_| w.flush()).is_err() {
            self.broken.store(true, Ordering::SeqCst);
        }
    }

    /// Whether a write has failed (a closed pipe: the GUI is gone).
    pub fn is_broken(&self) -> bool {
        self.broken.load(Ordering::SeqCst)
    }

    /// Whether nobody reads the output any more: a write failed, or (for the process's
    /// standard output, where the system can tell) the pipe's reading end is closed.
    pub fn reader_gone(&self) -> bool {
        self.is_broken() || self.probe.is_some_and(|gone| gone())
    }

    /// `info string error: ...`, kept to one ASCII line whatever the message holds.
    pub fn error(&self, message: &str) {
        self.line(&error_line(message));
    }
}

/// Whether standard output is a pipe whose reading end is closed (the GUI is gone). Asked
/// without writing: `poll` reports an error on such a pipe. Where it cannot be asked, false.
fn stdout_reader_gone() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let mut fd = libc::pollfd {
            fd: libc::STDOUT_FILENO,
            events: 0,
            revents: 0,
        };
        // SAFETY: one valid pollfd, a zero timeout; poll only writes its `revents`.
        let ready = unsafe { libc::poll(&mut fd, 1, 0) };
        ready > 0 && fd.revents & (libc::POLLERR | libc::POLLHUP) != 0
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    false
}

/// `info string error: ...` with anything but printable ASCII replaced by `?`.
pub(super) fn error_line(message: &str) -> String {
    let clean: String = message
        .chars()
        .map(|c| {
            if c.is_ascii() && !c.is_ascii_control() {
                c
            } else {
                '?'
            }
        })
        .collect();
    format!("info string error: {clean}")
}
