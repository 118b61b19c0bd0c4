//! What the loop thread, the search thread and a signal handler share: the stop flags and which
//! `go`s are unanswered.

use super::Output;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// State shared by the loop thread, the search thread and a signal handler.
pub(super) struct Shared {
    /// Polled by the running search.
    pub(super) stop: AtomicBool,
    /// `stop` ends every `go` numbered up to this one, running or still queued.
    pub(super) stop_through: AtomicU64,
    /// `quit`, a signal or a closed output: whatever is still queued is dropped.
    pub(super) quitting: AtomicBool,
    /// Ended by a signal: the exit status says so.
    pub(super) interrupted: AtomicBool,
    pub(super) searches: Mutex<Searches>,
}

/// Which `go`s are unanswered, for `isready` during a search; behind one lock so that a
/// `readyok` can never fall between a search ending and the next one starting.
#[derive(Default)]
pub(super) struct Searches {
    /// `go`s sent and not yet answered.
    pub(super) unanswered: usize,
    /// Whether one is running now.
    pub(super) running: bool,
    /// `readyok`s owed to an `isready` that came while the unanswered `go`s were still queued:
    /// printed as the next search starts, so they wait for no search and pass no reply to a
    /// command before that search.
    pub(super) ready_owed: usize,
}

impl Shared {
    /// Ends the running search and every `go` numbered up to `through`.
    pub(super) fn stop_through(&self, through: u64) {
        // The bound first, then the flag: a search that starts in between sees the bound
        // (see `begin`), one already running sees the flag.
        self.stop_through.fetch_max(through, Ordering::SeqCst);
        self.stop.store(true, Ordering::SeqCst);
    }

    /// Starts `go` number `id`: arms the stop flag, honouring a `stop` that came while it
    /// waited, and pays the `readyok`s owed.
    pub(super) fn begin(&self, id: u64, out: &Output) {
        self.stop.store(false, Ordering::SeqCst);
        if self.stop_through.load(Ordering::SeqCst) >= id {
            self.stop.store(true, Ordering::SeqCst);
        }
        let mut searches = self.searches.lock();
        searches.running = true;
        for _ in 0..std::mem::take(&mut searches.ready_owed) {
            out.line("readyok");
        }
    }

    /// A `go` is answered (its reply goes out right after).
    pub(super) fn end(&self) {
        let mut searches = self.searches.lock();
        searches.running = false;
        searches.unanswered -= 1;
    }

    pub(super) fn quit_now(&self) {
        self.quitting.store(true, Ordering::SeqCst);
        self.stop_through(u64::MAX);
    }
}
