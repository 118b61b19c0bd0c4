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

use crate::config::EngineConfig;
use crate::problem::{play_moves, PositionLine};
use crate::search::{
    self, Limits, Outcome, Progress, SearchError, SearchResult, Solutions, Solver, NEVER,
};
use crate::shogi::{Move, Position, RuleSet};
use command::{Command, MateTime};
use crossbeam_channel::{unbounded, Receiver, Sender};
use options::OptionChange;
use parking_lot::Mutex;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub const ENGINE_NAME: &str = "kyozume";
pub const ENGINE_AUTHOR: &str = "the kyozume developers";

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
fn error_line(message: &str) -> String {
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

/// Work for the search thread, in the order the GUI sent it.
enum Job {
    Go {
        /// Numbered from 1 in arrival order, so that a `stop` ends exactly the `go`s before it.
        id: u64,
        position: Box<Position>,
        limits: Box<Limits>,
    },
    /// Protocol lines to print once the jobs before them are done.
    Lines(Vec<String>),
    /// `probe`: what the table knows about a position.
    Probe(Box<Position>),
    Resize(usize),
    Clear,
    /// Answer `readyok` once the jobs before it (a table resize, say) are done, with the
    /// table made and the search threads started for `threads`.
    Ready {
        threads: usize,
    },
    Quit,
}

/// State shared by the loop thread, the search thread and a signal handler.
struct Shared {
    /// Polled by the running search.
    stop: AtomicBool,
    /// `stop` ends every `go` numbered up to this one, running or still queued.
    stop_through: AtomicU64,
    /// `quit`, a signal or a closed output: whatever is still queued is dropped.
    quitting: AtomicBool,
    /// Ended by a signal: the exit status says so.
    interrupted: AtomicBool,
    searches: Mutex<Searches>,
}

/// Which `go`s are unanswered, for `isready` during a search; behind one lock so that a
/// `readyok` can never fall between a search ending and the next one starting.
#[derive(Default)]
struct Searches {
    /// `go`s sent and not yet answered.
    unanswered: usize,
    /// Whether one is running now.
    running: bool,
    /// `readyok`s owed to an `isready` that came while the unanswered `go`s were still queued:
    /// printed as the next search starts, so they wait for no search and pass no reply to a
    /// command before that search.
    ready_owed: usize,
}

impl Shared {
    /// Ends the running search and every `go` numbered up to `through`.
    fn stop_through(&self, through: u64) {
        // The bound first, then the flag: a search that starts in between sees the bound
        // (see `begin`), one already running sees the flag.
        self.stop_through.fetch_max(through, Ordering::SeqCst);
        self.stop.store(true, Ordering::SeqCst);
    }

    /// Starts `go` number `id`: arms the stop flag, honouring a `stop` that came while it
    /// waited, and pays the `readyok`s owed.
    fn begin(&self, id: u64, out: &Output) {
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
    fn end(&self) {
        let mut searches = self.searches.lock();
        searches.running = false;
        searches.unanswered -= 1;
    }

    fn quit_now(&self) {
        self.quitting.store(true, Ordering::SeqCst);
        self.stop_through(u64::MAX);
    }
}

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

struct Session {
    config: EngineConfig,
    position: Position,
    shared: Arc<Shared>,
    jobs: Sender<Job>,
    out: Output,
    gos_sent: u64,
}

impl Session {
    /// Queues output behind the work before it.
    fn reply(&self, lines: Vec<String>) {
        let _ = self.jobs.send(Job::Lines(lines));
    }

    fn error(&self, message: &str) {
        self.reply(vec![error_line(message)]);
    }

    /// Handles one input line; false on `quit`.
    fn handle(&mut self, line: &str) -> bool {
        let command = match Command::parse(line) {
            Ok(c) => c,
            Err(e) => {
                self.error(&e.to_string());
                return true;
            }
        };
        match command {
            Command::Nothing | Command::PonderHit => {}
            Command::Usi => {
                let mut lines = vec![
                    format!("id name {ENGINE_NAME} {}", env!("CARGO_PKG_VERSION")),
                    format!("id author {ENGINE_AUTHOR}"),
                ];
                lines.extend(options::declarations(&self.config));
                lines.push("usiok".to_string());
                self.reply(lines);
            }
            Command::IsReady => {
                // During a search (a `go` unanswered), at once: now if one runs, else as the
                // next one starts. Otherwise after the work queued before it, such as a table
                // resize, so that its outcome is reported before `readyok`.
                let mut searches = self.shared.searches.lock();
                if searches.unanswered == 0 {
                    let _ = self.jobs.send(Job::Ready {
                        threads: self.config.threads,
                    });
                } else if searches.running {
                    self.out.line("readyok");
                } else {
                    searches.ready_owed += 1;
                }
            }
            Command::SetOption { name, value } => self.set_option(&name, value.as_deref()),
            Command::UsiNewGame | Command::GameOver => {}
            Command::Position { base, moves } => {
                match (PositionLine { base, moves }).build(self.rules()) {
                    Ok(p) => self.position = p,
                    Err(e) => self.error(&format!("{e}; position unchanged")),
                }
            }
            Command::GoMate(time) => self.go_mate(time),
            Command::Probe { base, moves } => {
                let target = match base {
                    Some(base) => PositionLine { base, moves }.build(self.rules()),
                    None => play_moves(self.position.clone(), &moves, self.rules()),
                };
                match target {
                    Ok(p) => {
                        let _ = self.jobs.send(Job::Probe(Box::new(p)));
                    }
                    Err(e) => self.error(&format!("probe: {e}")),
                }
            }
            Command::GoGame => self.reply(vec![
                "info string kyozume only solves helpmates: use 'go mate'".to_string(),
                "bestmove resign".to_string(),
            ]),
            Command::Stop => self.shared.stop_through(self.gos_sent),
            Command::Quit => return false,
            Command::Display => {
                let mut lines = crate::shogi::display::board_lines(&self.position);
                lines.push(format!("sfen {}", self.position.to_sfen()));
                lines.push(format!(
                    "stipulation {}",
                    stipulation_words(self.config.stipulation())
                ));
                self.reply(lines);
            }
        }
        true
    }

    fn set_option(&mut self, name: &str, value: Option<&str>) {
        match options::parse_change(name, value) {
            Err(e) => self.error(&e.to_string()),
            Ok(OptionChange::HashMb(mb)) => {
                self.config.hash_mb = mb;
                let _ = self.jobs.send(Job::Resize(mb));
            }
            Ok(OptionChange::Threads(n)) => self.config.threads = n,
            Ok(OptionChange::SolutionLimit(n)) => self.config.solution_limit = n,
            Ok(OptionChange::TempDir(dir)) => self.config.temp_dir = dir,
            Ok(OptionChange::DiskCapMb(mb)) => self.config.disk_cap_mb = mb,
            Ok(OptionChange::CheckpointDir(dir)) => self.config.checkpoint_dir = dir,
            Ok(OptionChange::CheckpointMinutes(m)) => self.config.checkpoint_minutes = m,
            Ok(OptionChange::Goal(goal)) => self.config.goal = goal,
            Ok(OptionChange::DefenderFirst(first)) => self.config.defender_first = first,
            Ok(OptionChange::PieceMoves(moves)) => self.config.piece_moves = moves,
            Ok(OptionChange::PawnDropMate(rule)) => self.config.pawn_drop_mate = rule,
            Ok(OptionChange::Captures(rule)) => self.config.captures = rule,
            Ok(OptionChange::CaptureRule(rule)) => self.config.capture_rule = rule,
            Ok(OptionChange::Paralysis(rule)) => self.config.paralysis = rule,
            Ok(OptionChange::MaxPlies(n)) => self.config.max_plies = n,
            Ok(OptionChange::ClearHash) => {
                let _ = self.jobs.send(Job::Clear);
            }
            Ok(OptionChange::Ignored) => {}
        }
    }

    /// The rules the options set: positions and moves are read under them.
    fn rules(&self) -> RuleSet {
        self.config.stipulation().rules()
    }

    fn go_mate(&mut self, time: MateTime) {
        let stipulation = self.config.stipulation();
        if let Err(e) = stipulation.check_position(&self.position) {
            self.reply(vec![
                error_line(&format!("{e}: nothing to search")),
                "checkmate nomate".to_string(),
            ]);
            return;
        }
        let time = match time {
            MateTime::Infinite => None,
            MateTime::Millis(ms) => Some(Duration::from_millis(ms)),
        };
        let limits = self.config.limits(stipulation, time);
        self.gos_sent += 1;
        self.shared.searches.lock().unanswered += 1;
        let _ = self.jobs.send(Job::Go {
            id: self.gos_sent,
            position: Box::new(self.position.clone()),
            limits: Box::new(limits),
        });
    }
}

fn search_loop(jobs: Receiver<Job>, shared: &Shared, out: &Output, hash_mb: usize) {
    // The table is made at the first `isready` or `go` (a GUI expects the long work there), so
    // `usi` is answered at once.
    let mut hash_mb = hash_mb;
    let mut table: Option<Solver> = None;
    let make_solver = |hash_mb: usize| -> Solver {
        match Solver::new(hash_mb) {
            Ok(s) => s,
            Err(e) => {
                out.error(&format!("{e}; using 16 MB"));
                Solver::new(16).expect("a 16 MB table")
            }
        }
    };
    for job in jobs.iter() {
        if out.is_broken() {
            shared.quit_now();
            break;
        }
        // After `quit` or a signal the queue is drained without doing the work: every `go`
        // still gets its one reply, and what was queued before is printed in order.
        let quitting = shared.quitting.load(Ordering::SeqCst);
        match job {
            Job::Quit => break,
            Job::Clear if !quitting => {
                if let Some(solver) = table.as_mut() {
                    solver.clear();
                }
            }
            Job::Resize(mb) if !quitting => match table.as_mut() {
                Some(solver) => {
                    if let Err(e) = solver.resize(mb) {
                        out.error(&format!("{e}; keeping {} MB", solver.hash_mb()));
                    }
                }
                None => hash_mb = mb,
            },
            Job::Probe(position) if !quitting => {
                let solver = table.get_or_insert_with(|| make_solver(hash_mb));
                let attacker = solver.last_attacker().unwrap_or(position.side_to_move());
                let problem = (attacker, solver.last_stipulation());
                let report = solver.probe(&position, problem, PROBE_TIME, &shared.quitting);
                for l in report.lines(&position, problem.1) {
                    out.line(&format!("info string {l}"));
                }
            }
            Job::Clear | Job::Resize(_) | Job::Probe(_) => {}
            Job::Ready { threads } => {
                // The long work a GUI expects here: the table written, the threads started and
                // the caches made (a first `go` that made them took a millisecond more).
                table
                    .get_or_insert_with(|| make_solver(hash_mb))
                    .prepare(threads);
                out.line("readyok");
            }
            Job::Lines(lines) => lines.iter().for_each(|l| out.line(l)),
            Job::Go { id, .. } if quitting => {
                shared.begin(id, out);
                shared.end();
                out.line("checkmate timeout");
            }
            Job::Go {
                id,
                position,
                limits,
            } => {
                shared.begin(id, out);
                out.line(&format!(
                    "info string stipulation {}{}",
                    stipulation_words(limits.stipulation),
                    limits
                        .max_plies
                        .map_or(String::new(), |n| format!(" max_plies {n}"))
                ));
                let solver = table.get_or_insert_with(|| make_solver(hash_mb));
                let result = solver.solve(&position, &limits, &shared.stop, &mut |p| {
                    if let Some(plies) = p.resumed_from {
                        out.line(&format!(
                            "info string resumed from a checkpoint at {plies} plies"
                        ));
                    }
                    out.line(&info_line(p));
                    if out.is_broken() {
                        // Nobody reads the answer any more.
                        shared.stop.store(true, Ordering::SeqCst);
                    }
                });
                // Answered before the line goes out: a GUI may send `isready` as soon as it
                // reads `checkmate`, and that one waits for the queue like any other.
                shared.end();
                match result {
                    Ok(r) => report_result(out, &r, limits.stipulation),
                    Err(e @ (SearchError::NoDefenderKing | SearchError::NoAttackerKing)) => {
                        out.error(&e.to_string());
                        out.line("checkmate nomate");
                    }
                    // Nothing proven about a mate: like a search that ran out of time.
                    Err(e @ SearchError::Disk(_)) => {
                        out.error(&e.to_string());
                        out.line("checkmate timeout");
                    }
                }
            }
        }
    }
}

/// How long `probe` searches for the shortest line from the position.
const PROBE_TIME: Duration = Duration::from_secs(2);

fn info_line(p: &Progress) -> String {
    let line = format!(
        "info depth {} nodes {} nps {} hashfull {} time {}",
        p.depth,
        p.nodes,
        p.nps(),
        p.hashfull,
        p.elapsed.as_millis()
    );
    match p.disk_bytes {
        0 => line,
        bytes => format!("{line} string disk {} MB", bytes.div_ceil(1 << 20)),
    }
}

fn moves_text(line: &[Move]) -> String {
    line.iter()
        .map(|m| m.to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `info string solutions ...` and one `info string alt ...` per further solution.
fn solution_lines(s: &Solutions) -> Vec<String> {
    let verdict = match s.unique() {
        Some(true) => "solutions 1 unique".to_string(),
        _ if s.complete => format!("solutions {}", s.count),
        _ => format!("solutions {} (counting stopped early)", s.count),
    };
    let mut lines = vec![format!("info string {verdict}")];
    for alt in s.lines.iter().skip(1) {
        lines.push(format!("info string alt {}", moves_text(alt)));
    }
    lines
}

/// A stipulation as the engine names it in `info string` and `d`: `HS# (協力自玉詰)` — in
/// ASCII, as the protocol's lines are, `HS# (kyouryoku jigyokuzume)`; conditions follow as
/// the options name them: `H# (kyouryokuzume / bakazume) conditions Annan, Greedy`.
fn stipulation_words(s: crate::shogi::Stipulation) -> String {
    use crate::shogi::Goal;
    let name = match (s.goal, s.defender_first) {
        (Goal::Helpmate, false) => "kyouryokuzume / bakazume",
        (Goal::Helpmate, true) => "ukesaki kyouryokuzume",
        (Goal::Selfmate, false) => "kyouryoku jigyokuzume",
        (Goal::Selfmate, true) => "ukesaki kyouryoku jigyokuzume",
    };
    if s.conditions.is_none() {
        format!("{} ({name})", s.code())
    } else {
        format!("{} ({name}) conditions {}", s.code(), s.conditions)
    }
}

fn report_result(out: &Output, r: &SearchResult, stipulation: crate::shogi::Stipulation) {
    let what = if stipulation == crate::shogi::Stipulation::HELPMATE {
        "helpmate".to_string()
    } else {
        format!("{} solution", stipulation.code())
    };
    let ms = r.elapsed.as_millis() as u64;
    let nps = r.nodes.saturating_mul(1000) / ms.max(1);
    match &r.outcome {
        Outcome::Mate(line) => {
            let moves = moves_text(line);
            if let Some(s) = &r.solutions {
                for l in solution_lines(s) {
                    out.line(&l);
                }
            }
            out.line(&format!(
                "info depth {0} seldepth {0} nodes {1} nps {nps} time {ms} score mate {0} pv {moves}",
                line.len(),
                r.nodes
            ));
            out.line(&format!("checkmate {moves}"));
        }
        Outcome::NoMate => {
            out.line(&format!("info string proven: no {what} at any length"));
            out.line("checkmate nomate");
        }
        Outcome::NoMateWithin { max_plies } => {
            out.line(&format!(
                "info string proven: no {what} within {max_plies} plies (MaxPlies {max_plies}; longer ones not searched)"
            ));
            out.line("checkmate nomate");
        }
        Outcome::Unknown { lower_bound } => {
            if *lower_bound != NEVER {
                out.line(&format!(
                    "info string no {what} shorter than {lower_bound} plies; search ended before an answer"
                ));
            }
            out.line("checkmate timeout");
        }
    }
}
