//! What the engine knows about one position after a search: its table entry, the bounds of its
//! children, and the shortest line from it (a composer's "why is this not a mate in 7?").

mod describe;

use super::tt::NEVER;
use super::{Limits, Outcome, Solver};
use crate::shogi::movegen::MoveList;
use crate::shogi::{Color, Goal, Move, Position, Stipulation};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// A position's standing in the helpmate graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The attacker is to move: its children are its checks.
    Attacker,
    /// The defender is to move (in check, or first in a problem where it moves first): its
    /// children are its legal moves.
    Defender,
    /// The defender is to move but not in check, where it does not move first: no line of the
    /// problem passes here.
    Outside,
}

/// What the transposition table holds for a position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableEntry {
    /// Nothing stored (never searched, or overwritten).
    Unknown,
    /// No helpmate shorter than `plies`; `conditional` when that holds only because the last
    /// deepening iteration failed past a repetition (see `helpmate.rs`).
    NoMateShorterThan { plies: u32, conditional: bool },
    /// Proven: no helpmate at any length.
    NoMateAtAll,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeChild {
    pub mv: Move,
    pub entry: TableEntry,
}

/// The shortest line from the probed position, as far as a short search found it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProbeLine {
    Mate(Vec<Move>),
    NoMate,
    /// The search ended first; no helpmate is shorter than this.
    Unknown {
        lower_bound: u32,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeReport {
    pub role: Role,
    pub entry: TableEntry,
    /// The only live move, when the table knows it.
    pub single: Option<Move>,
    /// Checks (attacker) or evasions (defender), lowest known bound first.
    pub children: Vec<ProbeChild>,
    pub line: ProbeLine,
}

impl Solver {
    /// What the table says about `pos` (with `attacker` the side that gives the checks, and
    /// the goal of `stipulation`) and the shortest line from it, searched for at most `time`
    /// (sharing, and adding to, the table's facts; `stop` ends it early).
    pub fn probe(
        &mut self,
        pos: &Position,
        (attacker, stipulation): (Color, Stipulation),
        time: Duration,
        stop: &AtomicBool,
    ) -> ProbeReport {
        let rules = stipulation.rules();
        let role = if pos.side_to_move() == attacker {
            Role::Attacker
        } else if rules.in_check(pos) || stipulation.defender_first {
            Role::Defender
        } else {
            Role::Outside
        };
        let entry = self.table_entry(pos.key());
        let single = self.tt.probe(pos.key()).and_then(|p| p.single);
        let mut moves = MoveList::new();
        match role {
            Role::Attacker => rules.checks(pos, &mut moves),
            Role::Defender => rules.legal(pos, &mut moves),
            Role::Outside => {}
        }
        let mut children: Vec<ProbeChild> = moves
            .iter()
            .map(|&mv| ProbeChild {
                mv,
                entry: self.table_entry(pos.key_after(mv)),
            })
            .collect();
        children.sort_by_key(|c| entry_order(c.entry));
        let from = |defender_first| Stipulation {
            defender_first,
            ..stipulation
        };
        let line = match role {
            Role::Outside => ProbeLine::NoMate,
            // Checkmated: the goal itself when the defender is the side mated (H#).
            Role::Defender if children.is_empty() => match stipulation.goal {
                Goal::Helpmate if rules.in_check(pos) => ProbeLine::Mate(Vec::new()),
                _ => ProbeLine::NoMate,
            },
            Role::Attacker if children.is_empty() => match stipulation.goal {
                Goal::Selfmate if rules.is_checkmate(pos) => ProbeLine::Mate(Vec::new()),
                _ => ProbeLine::NoMate,
            },
            Role::Attacker => self.shortest_line(pos, from(false), time, stop),
            Role::Defender => self.shortest_line(pos, from(true), time, stop),
        };
        ProbeReport {
            role,
            entry,
            single,
            children,
            line,
        }
    }

    fn table_entry(&self, key: u128) -> TableEntry {
        match self.tt.probe(key) {
            None => TableEntry::Unknown,
            Some(p) if p.lb == NEVER => TableEntry::NoMateAtAll,
            Some(p) => TableEntry::NoMateShorterThan {
                plies: p.lb,
                conditional: p.conditional,
            },
        }
    }

    fn shortest_line(
        &mut self,
        pos: &Position,
        stipulation: Stipulation,
        time: Duration,
        stop: &AtomicBool,
    ) -> ProbeLine {
        let limits = Limits {
            stipulation,
            time: Some(time),
            ..Default::default()
        };
        match self.solve(pos, &limits, stop, &mut |_| {}) {
            Ok(r) => match r.outcome {
                Outcome::Mate(line) => ProbeLine::Mate(line),
                Outcome::NoMate => ProbeLine::NoMate,
                Outcome::Unknown { lower_bound } => ProbeLine::Unknown { lower_bound },
                // (A probe sets no bound; were it to, the bound is what it proved.)
                Outcome::NoMateWithin { max_plies } => ProbeLine::Unknown {
                    lower_bound: max_plies + 1,
                },
            },
            Err(_) => ProbeLine::NoMate,
        }
    }
}

/// Lowest known bound first, unknown ones after the known finite ones, dead ones last.
fn entry_order(entry: TableEntry) -> (u8, u32) {
    match entry {
        TableEntry::NoMateShorterThan { plies, .. } => (0, plies),
        TableEntry::Unknown => (1, 0),
        TableEntry::NoMateAtAll => (2, 0),
    }
}
