//! The search thread behind the API: it owns the solver (its table sized by `USI_Hash`) and
//! solves one problem at a time; a request made while one runs is refused, not queued (a page
//! waiting minutes for an answer it did not ask for would be worse).

use crate::config::EngineConfig;
use crate::problem::Length;
use crate::report::Report;
use crate::search::{Limits, Progress, Solver, NEVER};
use crate::shogi::{Position, Stipulation};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::{oneshot, watch};

/// One problem to solve, and where its report goes.
pub struct Job {
    pub position: Position,
    pub stipulation: Stipulation,
    pub length: Option<Length>,
    pub limits: Limits,
    pub reply: oneshot::Sender<Report>,
}

/// What the page shows while a problem is being solved (and after: `running` false).
#[derive(Clone, Debug, Default, Serialize)]
pub struct ProgressEvent {
    /// A problem is being solved.
    pub running: bool,
    /// The length (plies) being searched.
    pub depth: u32,
    /// No solution is shorter than this (`null`: none at all, proven).
    pub lower_bound: Option<u32>,
    pub nodes: u64,
    pub nps: u64,
    pub elapsed_ms: u64,
    /// The memory in use, per mille: the table's fill while deepening, the budget's share
    /// the breadth-first pass holds during it.
    pub hashfull: u32,
    /// What the breadth-first pass has written to disk (MB).
    pub disk_mb: u64,
}

impl ProgressEvent {
    fn of(p: &Progress) -> ProgressEvent {
        ProgressEvent {
            running: true,
            depth: p.depth,
            lower_bound: (p.lower_bound != NEVER).then_some(p.lower_bound),
            nodes: p.nodes,
            nps: p.nps(),
            elapsed_ms: p.elapsed.as_millis() as u64,
            hashfull: p.hashfull,
            disk_mb: p.disk_bytes >> 20,
        }
    }
}

/// The handle the API holds (cheap to clone).
#[derive(Clone)]
pub struct Engine {
    jobs: crossbeam_channel::Sender<Job>,
    busy: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    progress: Arc<watch::Sender<ProgressEvent>>,
}

/// Why a job was not taken.
pub enum Refused {
    /// Another problem is being solved.
    Busy,
    /// The search thread has ended.
    Gone,
}

impl Engine {
    /// Starts the search thread with its table (the memory is taken now, so that a machine
    /// without it says so at once).
    pub fn start(config: &EngineConfig) -> Result<Engine, String> {
        let (jobs, queue) = crossbeam_channel::bounded::<Job>(1);
        let busy = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (progress, _) = watch::channel(ProgressEvent::default());
        let progress = Arc::new(progress);
        let (ready, started) = crossbeam_channel::bounded(1);
        let hash_mb = config.hash_mb;
        let threads = config.threads;
        let (thread_busy, thread_stop, thread_progress) =
            (busy.clone(), stop.clone(), progress.clone());
        std::thread::Builder::new()
            .name("serve-search".into())
            .stack_size(crate::search::SEARCH_STACK_BYTES)
            .spawn(move || {
                let mut solver = match Solver::new(hash_mb) {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = ready.send(Err(e.to_string()));
                        return;
                    }
                };
                solver.prepare(threads);
                let _ = ready.send(Ok(()));
                for job in queue {
                    let report = solve(&mut solver, &job, &thread_stop, &thread_progress);
                    thread_progress.send_modify(|p| p.running = false);
                    thread_busy.store(false, Ordering::SeqCst);
                    // (The page may have gone: nobody to tell.)
                    let _ = job.reply.send(report);
                }
            })
            .map_err(|e| format!("cannot start the search thread: {e}"))?;
        started
            .recv()
            .map_err(|_| "the search thread ended at its start".to_string())??;
        Ok(Engine {
            jobs,
            busy,
            stop,
            progress,
        })
    }

    /// Hands `job` to the search thread, unless it is busy.
    pub fn submit(&self, job: Job) -> Result<(), Refused> {
        if self
            .busy
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return Err(Refused::Busy);
        }
        self.stop.store(false, Ordering::SeqCst);
        self.progress.send_replace(ProgressEvent {
            running: true,
            ..Default::default()
        });
        self.jobs.send(job).map_err(|_| {
            self.busy.store(false, Ordering::SeqCst);
            Refused::Gone
        })
    }

    /// Asks the running search to stop (it answers with what it has). Whether one was running.
    pub fn stop(&self) -> bool {
        self.stop.store(true, Ordering::SeqCst);
        self.busy.load(Ordering::SeqCst)
    }

    /// Progress, from its latest state on.
    pub fn progress(&self) -> watch::Receiver<ProgressEvent> {
        self.progress.subscribe()
    }
}

fn solve(
    solver: &mut Solver,
    job: &Job,
    stop: &AtomicBool,
    progress: &watch::Sender<ProgressEvent>,
) -> Report {
    crate::report::answer(
        solver,
        None,
        (&job.position, job.stipulation, job.length),
        &job.limits,
        stop,
        &mut |p| {
            progress.send_replace(ProgressEvent::of(p));
        },
    )
}
