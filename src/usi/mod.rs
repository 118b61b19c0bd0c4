//! The USI front end: a loop thread that reads commands and a search thread that owns the
//! solver. The loop keeps answering (`isready`, `stop`, `position`, ...) while a search runs.

pub mod command;
pub mod options;

use crate::config::EngineConfig;
use crate::search::{self, Limits, Outcome, Progress, SearchResult, Solutions, Solver, NEVER};
use crate::shogi::{Move, Position};
use command::{Command, MateTime, PositionBase};
use crossbeam_channel::{unbounded, Receiver, Sender};
use options::OptionChange;
use parking_lot::Mutex;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub const ENGINE_NAME: &str = "kyozume";
pub const ENGINE_AUTHOR: &str = "the kyozume developers";

/// Where protocol lines go: each line is written whole and flushed at once, so lines from the
/// two threads never interleave.
#[derive(Clone)]
pub struct Output(Arc<Mutex<Box<dyn Write + Send>>>);

impl Output {
    pub fn stdout() -> Output {
        Output::new(Box::new(std::io::stdout()))
    }

    pub fn new(w: Box<dyn Write + Send>) -> Output {
        Output(Arc::new(Mutex::new(w)))
    }

    pub fn line(&self, text: &str) {
        let mut w = self.0.lock();
        // A closed pipe means the GUI is gone; there is nobody left to tell.
        let _ = writeln!(w, "{text}");
        let _ = w.flush();
    }

    /// `info string error: ...`, kept to one ASCII line whatever the message holds.
    pub fn error(&self, message: &str) {
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
        self.line(&format!("info string error: {clean}"));
    }
}

/// Work for the search thread, in the order the GUI sent it.
enum Job {
    Go {
        position: Box<Position>,
        limits: Limits,
    },
    Resize(usize),
    Clear,
    /// Answer `readyok` once the jobs before it (a table resize, say) are done.
    Ready,
    Quit,
}

/// State shared by the two threads.
struct Shared {
    stop: AtomicBool,
    searching: AtomicBool,
}

/// Runs the engine until `quit` or the end of input. Returns the process exit status.
pub fn run(config: EngineConfig, input: impl BufRead, out: Output) -> i32 {
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        searching: AtomicBool::new(false),
    });
    let (jobs, job_rx) = unbounded::<Job>();
    let search_thread = {
        let shared = Arc::clone(&shared);
        let out = out.clone();
        let hash_mb = config.hash_mb;
        std::thread::Builder::new()
            .name("search".into())
            .stack_size(search::SEARCH_STACK_BYTES)
            .spawn(move || search_loop(job_rx, &shared, &out, hash_mb))
            .expect("spawn the search thread")
    };
    let mut session = Session {
        config,
        position: Position::startpos(),
        shared: Arc::clone(&shared),
        jobs: jobs.clone(),
        out: out.clone(),
    };
    for line in input.lines() {
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                // Not UTF-8 (or a read error): report and keep reading.
                if e.kind() == std::io::ErrorKind::InvalidData {
                    out.error("input line is not valid UTF-8");
                    continue;
                }
                break;
            }
        };
        if !session.handle(&line) {
            break;
        }
    }
    shared.stop.store(true, Ordering::SeqCst);
    let _ = jobs.send(Job::Quit);
    let _ = search_thread.join();
    0
}

struct Session {
    config: EngineConfig,
    position: Position,
    shared: Arc<Shared>,
    jobs: Sender<Job>,
    out: Output,
}

impl Session {
    /// Handles one input line; false on `quit`.
    fn handle(&mut self, line: &str) -> bool {
        let command = match Command::parse(line) {
            Ok(c) => c,
            Err(e) => {
                self.out.error(&e.to_string());
                return true;
            }
        };
        match command {
            Command::Nothing | Command::PonderHit => {}
            Command::Usi => {
                self.out.line(&format!(
                    "id name {ENGINE_NAME} {}",
                    env!("CARGO_PKG_VERSION")
                ));
                self.out.line(&format!("id author {ENGINE_AUTHOR}"));
                for decl in options::declarations(&self.config) {
                    self.out.line(&decl);
                }
                self.out.line("usiok");
            }
            Command::IsReady => {
                // During a search, at once; otherwise after pending work such as a resize, so
                // that its outcome is reported before `readyok`.
                if self.shared.searching.load(Ordering::SeqCst) {
                    self.out.line("readyok");
                } else {
                    let _ = self.jobs.send(Job::Ready);
                }
            }
            Command::SetOption { name, value } => self.set_option(&name, value.as_deref()),
            Command::UsiNewGame | Command::GameOver => {}
            Command::Position { base, moves } => match build_position(&base, &moves) {
                Ok(p) => self.position = p,
                Err(e) => self.out.error(&format!("{e}; position unchanged")),
            },
            Command::GoMate(time) => self.go_mate(time),
            Command::GoGame => {
                self.out
                    .line("info string kyozume only solves helpmates: use 'go mate'");
                self.out.line("bestmove resign");
            }
            Command::Stop => self.shared.stop.store(true, Ordering::SeqCst),
            Command::Quit => return false,
            Command::Display => {
                for l in crate::shogi::display::board_lines(&self.position) {
                    self.out.line(&l);
                }
                self.out.line(&format!("sfen {}", self.position.to_sfen()));
            }
        }
        true
    }

    fn set_option(&mut self, name: &str, value: Option<&str>) {
        match options::parse_change(name, value) {
            Err(e) => self.out.error(&e.to_string()),
            Ok(OptionChange::HashMb(mb)) => {
                self.config.hash_mb = mb;
                let _ = self.jobs.send(Job::Resize(mb));
            }
            Ok(OptionChange::Threads(n)) => self.config.threads = n,
            Ok(OptionChange::SolutionLimit(n)) => self.config.solution_limit = n,
            Ok(OptionChange::ClearHash) => {
                let _ = self.jobs.send(Job::Clear);
            }
            Ok(OptionChange::Ignored) => {}
        }
    }

    fn go_mate(&mut self, time: MateTime) {
        if self.shared.searching.load(Ordering::SeqCst) {
            self.out
                .error("a search is already running; send 'stop' first");
            return;
        }
        if self.position.king(!self.position.side_to_move()).is_none() {
            self.out
                .error("the side not to move has no king, so there is nothing to mate");
            self.out.line("checkmate nomate");
            return;
        }
        let limits = Limits {
            time: match time {
                MateTime::Infinite => None,
                MateTime::Millis(ms) => Some(Duration::from_millis(ms)),
            },
            max_plies: None,
            solution_limit: self.config.solution_limit,
            ..Default::default()
        };
        // Cleared here, not on the search thread, so that a `stop` sent right after `go` is
        // never lost.
        self.shared.stop.store(false, Ordering::SeqCst);
        self.shared.searching.store(true, Ordering::SeqCst);
        let _ = self.jobs.send(Job::Go {
            position: Box::new(self.position.clone()),
            limits,
        });
    }
}

/// Builds the position of a `position` command; any error leaves the caller's position as is.
pub fn build_position(base: &PositionBase, moves: &[String]) -> Result<Position, String> {
    let mut pos = match base {
        PositionBase::Startpos => Position::startpos(),
        PositionBase::Sfen(s) => Position::from_sfen(s).map_err(|e| format!("bad SFEN: {e}"))?,
    };
    for (i, text) in moves.iter().enumerate() {
        let m = pos
            .parse_move(text)
            .map_err(|e| format!("move {} of the list: {e}", i + 1))?;
        pos.do_move(m);
    }
    Ok(pos)
}

fn search_loop(jobs: Receiver<Job>, shared: &Shared, out: &Output, hash_mb: usize) {
    let mut solver = match Solver::new(hash_mb) {
        Ok(s) => s,
        Err(e) => {
            out.error(&format!("{e}; using 16 MB"));
            Solver::new(16).expect("a 16 MB table")
        }
    };
    for job in jobs.iter() {
        match job {
            Job::Quit => break,
            Job::Clear => solver.clear(),
            Job::Ready => out.line("readyok"),
            Job::Resize(mb) => {
                if let Err(e) = solver.resize(mb) {
                    out.error(&format!("{e}; keeping {} MB", solver.hash_mb()));
                }
            }
            Job::Go { position, limits } => {
                let result = solver.solve(&position, &limits, &shared.stop, &mut |p| {
                    out.line(&info_line(p))
                });
                // Idle again before the answer goes out: a GUI may send the next `go` as soon
                // as it reads the `checkmate` line.
                shared.searching.store(false, Ordering::SeqCst);
                match result {
                    Ok(r) => report_result(out, &r),
                    Err(e) => {
                        out.error(&e.to_string());
                        out.line("checkmate nomate");
                    }
                }
            }
        }
    }
}

fn info_line(p: &Progress) -> String {
    format!(
        "info depth {} nodes {} nps {} hashfull {} time {}",
        p.depth,
        p.nodes,
        p.nps(),
        p.hashfull,
        p.elapsed.as_millis()
    )
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

fn report_result(out: &Output, r: &SearchResult) {
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
            out.line("info string proven: no helpmate at any length");
            out.line("checkmate nomate");
        }
        Outcome::Unknown { lower_bound } => {
            if *lower_bound != NEVER {
                out.line(&format!(
                    "info string no helpmate shorter than {lower_bound} plies; search ended before an answer"
                ));
            }
            out.line("checkmate timeout");
        }
    }
}
