//! The loop thread's side: each command line parsed and acted on at once, the position and the
//! options kept, and everything that prints or needs the solver sent to the search thread.

use super::command::{Command, MateTime};
use super::options::{self, OptionChange};
use super::output::error_line;
use super::search_thread::Job;
use super::shared::Shared;
use super::words::stipulation_words;
use super::{Output, ENGINE_AUTHOR, ENGINE_NAME};
use crate::config::EngineConfig;
use crate::problem::{play_moves, PositionLine};
use crate::shogi::{Position, RuleSet};
use crossbeam_channel::Sender;
use std::sync::Arc;
use std::time::Duration;

pub(super) struct Session {
    pub(super) config: EngineConfig,
    pub(super) position: Position,
    pub(super) shared: Arc<Shared>,
    pub(super) jobs: Sender<Job>,
    pub(super) out: Output,
    pub(super) gos_sent: u64,
}

impl Session {
    /// Queues output behind the work before it.
    pub(super) fn reply(&self, lines: Vec<String>) {
        let _ = self.jobs.send(Job::Lines(lines));
    }

    fn error(&self, message: &str) {
        self.reply(vec![error_line(message)]);
    }

    /// Handles one input line; false on `quit`.
    pub(super) fn handle(&mut self, line: &str) -> bool {
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
