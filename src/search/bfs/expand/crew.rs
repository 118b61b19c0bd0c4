//! A fork-join for the pass's narrow levels, whose threads wait for work by spinning on one
//! cache line instead of in rayon's idle loop.
//!
//! A level of a hundred positions is two fork-joins of some 25 microseconds of work each. In
//! rayon, the thread that is handed a share has to notice it (it waits between `sched_yield`
//! calls) and the caller has to notice its end: measured on 寿限無 19447 at two threads (phase
//! timers, a throw-away build), the other thread started its share of an expansion 1.4-2.5 us
//! after it was handed out, and the expansion's fork-join took 3-4.5 us a level beyond its work,
//! about 6% of the pass. Here the helpers spin on the job word, so a job starts within a round
//! trip between the CPUs; a helper with nothing to do for a while goes back to rayon's pool,
//! where the pass's other parallel work (a wide level's merge, freezing the keys) runs as
//! before, and is called back by the next job.
//!
//! Nothing depends on the helpers for its result: a job's parts are claimed one by one by
//! whoever comes first, the caller included, and a part runs exactly once; a job no helper
//! joins is run by the caller alone.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A job: called once for each part number.
type Job<'a> = &'a (dyn Fn(usize) + Sync);

/// How long a helper with nothing to do keeps spinning before it goes back to the pool: longer
/// than the one-thread work between two jobs of a narrow level (a merge: a few microseconds).
const IDLE: Duration = Duration::from_micros(200);
/// Spins between two `yield_now` calls (so that more threads than CPUs still progress).
const SPINS_A_YIELD: u32 = 256;

/// The word the helpers watch: the job's number (high 32 bits), its parts (16 bits) and the
/// next part to claim (low 16 bits).
const PARTS_SHIFT: u32 = 16;
const JOB_SHIFT: u32 = 32;
const FIELD: u64 = (1 << PARTS_SHIFT) - 1;

/// What the caller and its helpers share.
#[derive(Default)]
pub(crate) struct Shared {
    claim: AtomicU64,
    /// The current job, as a pointer to a `Job` on the caller's stack.
    job: AtomicPtr<()>,
    /// Parts of the current job that have run.
    done: AtomicUsize,
    /// Helpers spawned and not yet gone back to the pool.
    live: AtomicUsize,
    dismissed: AtomicBool,
    /// A part panicked on a helper.
    panicked: AtomicBool,
}

/// The caller's side: runs jobs on itself and the helpers it calls from `scope`. One crew a
/// `Shared`: once dropped, it has dismissed the helpers for good.
pub(crate) struct Crew<'scope, 's> {
    scope: &'s rayon::Scope<'scope>,
    shared: &'scope Shared,
    helpers: usize,
    jobs: u64,
}

impl<'scope, 's> Crew<'scope, 's> {
    /// A crew of the calling thread and up to `helpers` of the pool `scope` spawns into.
    pub(crate) fn new(
        scope: &'s rayon::Scope<'scope>,
        shared: &'scope Shared,
        helpers: usize,
    ) -> Crew<'scope, 's> {
        Crew {
            scope,
            shared,
            helpers,
            jobs: 0,
        }
    }

    /// Runs `job(part)` for every part in `0..parts`, each once, on this thread and whichever
    /// helpers join in; returns when all have run. A panic in any part is raised here, after
    /// all the parts have ended.
    pub(crate) fn run(&mut self, parts: usize, job: &(dyn Fn(usize) + Sync)) {
        assert!(parts as u64 <= FIELD, "{parts} parts in one job");
        let shared = self.shared;
        self.jobs = (self.jobs + 1) & u64::from(u32::MAX);
        let number = self.jobs;
        let live = shared.live.load(Ordering::Acquire);
        for _ in live..self.helpers.min(parts.saturating_sub(1)) {
            shared.live.fetch_add(1, Ordering::AcqRel);
            self.scope.spawn(move |_| shared.serve(number));
        }
        let erased: Job = job;
        shared.done.store(0, Ordering::Relaxed);
        shared
            .job
            .store(&erased as *const Job as *mut (), Ordering::Relaxed);
        // Publishes the job (release: the pointer and `done` above come with it).
        shared.claim.store(
            number << JOB_SHIFT | (parts as u64) << PARTS_SHIFT,
            Ordering::Release,
        );
        // Every part claimed here counts as done, the one that panicked too (else the wait
        // below never ends); after a panic, the parts still unclaimed are claimed, not run.
        let mut panic = None;
        while let Some(part) = shared.claim(number) {
            if panic.is_none() {
                panic = catch_unwind(AssertUnwindSafe(|| job(part))).err();
            }
            shared.done.fetch_add(1, Ordering::Release);
        }
        // Every part has been claimed; wait for those running elsewhere, which borrow `job`.
        let mut spins = 0;
        while shared.done.load(Ordering::Acquire) < parts {
            wait(&mut spins);
        }
        if let Some(payload) = panic {
            resume_unwind(payload);
        }
        if shared.panicked.swap(false, Ordering::AcqRel) {
            panic!("a part of a breadth-first job panicked on a helper thread");
        }
    }
}

impl Crew<'_, '_> {
    /// Helpers this crew calls on.
    pub(crate) fn helpers(&self) -> usize {
        self.helpers
    }

    /// Runs `own` on this thread while `job(part)` runs for every part in `0..parts` on the
    /// helpers, each part on a thread of its own (`parts` at most [`Crew::helpers`]): for work
    /// whose parts wait for one another, which one thread running them in turn could not do.
    /// `own` is given a nudge to call while it waits for the helpers: it calls back a helper
    /// in place of one that went back to the pool just as the job came. Returns once `own` and
    /// every part have ended; a panic in either is raised here then.
    pub(crate) fn beside(
        &mut self,
        parts: usize,
        job: &(dyn Fn(usize) + Sync),
        own: &mut dyn FnMut(&dyn Fn()),
    ) {
        assert!(
            parts <= self.helpers,
            "{parts} parts for {} helpers",
            self.helpers
        );
        let shared = self.shared;
        let scope = self.scope;
        self.jobs = (self.jobs + 1) & u64::from(u32::MAX);
        let number = self.jobs;
        let erased: Job = job;
        shared.done.store(0, Ordering::Relaxed);
        shared
            .job
            .store(&erased as *const Job as *mut (), Ordering::Relaxed);
        shared.claim.store(
            number << JOB_SHIFT | (parts as u64) << PARTS_SHIFT,
            Ordering::Release,
        );
        // A helper between its last look at the job word and leaving counts as live until it
        // has left, and one running a part (until the whole job ends) cannot take another: the
        // nudge looks again, and calls another helper for each unclaimed part beyond the live
        // helpers free to take one.
        let nudge = || {
            let word = shared.claim.load(Ordering::Acquire);
            let (unclaimed, claimed) = if word >> JOB_SHIFT == number {
                let claimed = (word & FIELD) as usize;
                (parts.saturating_sub(claimed), claimed)
            } else {
                (0, 0)
            };
            let running = claimed.saturating_sub(shared.done.load(Ordering::Acquire));
            let free = shared.live.load(Ordering::Acquire).saturating_sub(running);
            for _ in free..unclaimed {
                shared.live.fetch_add(1, Ordering::AcqRel);
                scope.spawn(move |_| shared.serve(number));
            }
        };
        nudge();
        let panic = catch_unwind(AssertUnwindSafe(|| own(&nudge))).err();
        let mut spins = 0;
        while shared.done.load(Ordering::Acquire) < parts {
            nudge();
            wait(&mut spins);
        }
        if let Some(payload) = panic {
            resume_unwind(payload);
        }
        if shared.panicked.swap(false, Ordering::AcqRel) {
            panic!("a part of a breadth-first job panicked on a helper thread");
        }
    }
}

/// Threads that run a job's parts (a trait object, so that the pass need not carry a crew's
/// scope lifetimes): a crew, or a rayon pool.
pub(crate) trait Team {
    /// Runs `job(part)` for every part in `0..parts`, each once; returns when all have run.
    fn run(&mut self, parts: usize, job: &(dyn Fn(usize) + Sync));

    /// The crew, for work that needs its helpers beside the calling thread (see
    /// [`Crew::beside`]); none for a rayon pool.
    fn crew(&mut self) -> Option<&mut dyn Beside> {
        None
    }
}

/// A crew's [`Crew::beside`], behind a trait object (see `Team`).
pub(crate) trait Beside {
    fn helpers(&self) -> usize;
    fn beside(
        &mut self,
        parts: usize,
        job: &(dyn Fn(usize) + Sync),
        own: &mut dyn FnMut(&dyn Fn()),
    );
}

impl Team for Crew<'_, '_> {
    fn run(&mut self, parts: usize, job: &(dyn Fn(usize) + Sync)) {
        Crew::run(self, parts, job);
    }

    fn crew(&mut self) -> Option<&mut dyn Beside> {
        Some(self)
    }
}

impl Beside for Crew<'_, '_> {
    fn helpers(&self) -> usize {
        Crew::helpers(self)
    }

    fn beside(
        &mut self,
        parts: usize,
        job: &(dyn Fn(usize) + Sync),
        own: &mut dyn FnMut(&dyn Fn()),
    ) {
        Crew::beside(self, parts, job, own);
    }
}

impl Team for &rayon::ThreadPool {
    fn run(&mut self, parts: usize, job: &(dyn Fn(usize) + Sync)) {
        use rayon::prelude::*;
        self.install(|| (0..parts).into_par_iter().with_max_len(1).for_each(job));
    }
}

impl Drop for Crew<'_, '_> {
    /// Sends the helpers back to the pool (the scope waits for them).
    fn drop(&mut self) {
        self.shared.dismissed.store(true, Ordering::Release);
    }
}

impl Shared {
    /// Claims the next part of job `job`, if any is left.
    fn claim(&self, job: u64) -> Option<usize> {
        let mut word = self.claim.load(Ordering::Acquire);
        loop {
            let (number, parts, next) =
                (word >> JOB_SHIFT, word >> PARTS_SHIFT & FIELD, word & FIELD);
            if number != job || next >= parts {
                return None;
            }
            match self.claim.compare_exchange_weak(
                word,
                word + 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(next as usize),
                Err(now) => word = now,
            }
        }
    }

    /// A helper's loop, from job `first` on: runs the parts it can claim of each job, until
    /// dismissed or idle for `IDLE`.
    fn serve(&self, first: u64) {
        let mut seen = first.wrapping_sub(1) & u64::from(u32::MAX);
        let mut idle_since = Instant::now();
        let mut spins = 0;
        loop {
            let number = self.claim.load(Ordering::Acquire) >> JOB_SHIFT;
            if number != seen {
                seen = number;
                while let Some(part) = self.claim(number) {
                    // SAFETY: a successful claim of a part of job `number` means the caller
                    // has published that job and is waiting in `Crew::run` until `done`
                    // counts this part: the `Job` it points to lives on the caller's stack
                    // until then, and the pointer read after the claim is that job's (the
                    // caller replaces it only after all of the job's parts are done). The
                    // lifetime is erased only for this wait.
                    let job: Job = unsafe { *(self.job.load(Ordering::Relaxed) as *const Job) };
                    if catch_unwind(AssertUnwindSafe(|| job(part))).is_err() {
                        self.panicked.store(true, Ordering::Release);
                    }
                    self.done.fetch_add(1, Ordering::Release);
                }
                idle_since = Instant::now();
                spins = 0;
                continue;
            }
            if self.dismissed.load(Ordering::Acquire) {
                break;
            }
            wait(&mut spins);
            if spins.is_multiple_of(SPINS_A_YIELD) && idle_since.elapsed() >= IDLE {
                break;
            }
        }
        self.live.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One round of waiting: a spin, and every `SPINS_A_YIELD` a yield to other threads.
pub(crate) fn wait(spins: &mut u32) {
    *spins = spins.wrapping_add(1);
    if spins.is_multiple_of(SPINS_A_YIELD) {
        std::thread::yield_now();
    } else {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    }

    #[test]
    fn every_part_runs_once_whoever_runs_it() {
        for threads in [1, 2, 4] {
            let pool = pool(threads);
            let shared = Shared::default();
            pool.in_place_scope(|scope| {
                let mut crew = Crew::new(scope, &shared, threads - 1);
                for round in 0..2000u32 {
                    let parts = (round % 7) as usize;
                    let runs: Vec<AtomicU32> = (0..parts).map(|_| AtomicU32::new(0)).collect();
                    crew.run(parts, &|part| {
                        runs[part].fetch_add(1, Ordering::Relaxed);
                    });
                    assert!(runs.iter().all(|r| r.load(Ordering::Relaxed) == 1));
                    if round % 500 == 0 {
                        // Long enough for the helpers to go back to the pool.
                        std::thread::sleep(IDLE * 3);
                    }
                }
            });
            assert_eq!(shared.live.load(Ordering::Relaxed), 0);
        }
    }

    #[test]
    fn beside_runs_the_parts_at_once_with_the_callers_own() {
        // The caller's part and each helper's part wait for all the others: they must run at
        // the same time, each on a thread of its own. Between rounds the helpers go back to
        // the pool (a sleep longer than their idle time) and must be called back.
        for threads in [2, 3] {
            let pool = pool(threads);
            let shared = Shared::default();
            pool.in_place_scope(|scope| {
                let mut crew = Crew::new(scope, &shared, threads - 1);
                for round in 0..6 {
                    let arrived = AtomicU32::new(0);
                    // The caller nudges while it waits (a helper may have left just as the
                    // job came), the helpers do not.
                    let meet = |nudge: Option<&dyn Fn()>| {
                        arrived.fetch_add(1, Ordering::AcqRel);
                        let start = Instant::now();
                        while arrived.load(Ordering::Acquire) < threads as u32 {
                            if let Some(nudge) = nudge {
                                nudge();
                            }
                            assert!(
                                start.elapsed() < Duration::from_secs(10),
                                "{threads} threads, round {round}: a part never came"
                            );
                            std::hint::spin_loop();
                        }
                    };
                    let mut own_ran = false;
                    crew.beside(threads - 1, &|_| meet(None), &mut |nudge| {
                        meet(Some(nudge));
                        own_ran = true;
                    });
                    assert!(own_ran);
                    assert_eq!(arrived.load(Ordering::Relaxed), threads as u32);
                    if round % 2 == 1 {
                        std::thread::sleep(IDLE * 3);
                    }
                }
            });
        }
    }

    #[test]
    fn a_part_that_panics_is_raised_after_the_others_end() {
        // Without helpers the caller runs every part, the panicking one included; with one,
        // either may. The crew runs on its own thread so that a hang fails the test.
        for (helpers, panicking) in [(0, 0), (0, 3), (1, 0), (1, 3), (1, 7)] {
            let (sender, receiver) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let pool = pool(2);
                let shared = Shared::default();
                let ended = AtomicU32::new(0);
                let (caught, after) = pool.in_place_scope(|scope| {
                    let mut crew = Crew::new(scope, &shared, helpers);
                    let caught = catch_unwind(AssertUnwindSafe(|| {
                        crew.run(8, &|part| {
                            if part == panicking {
                                panic!("part {part}");
                            }
                            std::thread::sleep(Duration::from_millis(2));
                            ended.fetch_add(1, Ordering::Relaxed);
                        })
                    }));
                    // The crew still works after a panic.
                    let after = AtomicU32::new(0);
                    crew.run(4, &|_| {
                        after.fetch_add(1, Ordering::Relaxed);
                    });
                    (caught.is_err(), after.load(Ordering::Relaxed))
                });
                let _ = sender.send((caught, after, ended.load(Ordering::Relaxed)));
            });
            let (caught, after, ended) = receiver
                .recv_timeout(Duration::from_secs(20))
                .unwrap_or_else(|_| panic!("{helpers} helpers, part {panicking}: the crew hung"));
            assert!(caught, "the panic of part {panicking} was not raised");
            assert_eq!(after, 4);
            // Parts are claimed in order: those before the panicking one ran to their end
            // before `run` returned (with a helper, more may have).
            assert!(ended as usize >= panicking, "{ended} parts ended");
        }
    }
}
