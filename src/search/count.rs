//! Counting the shortest helpmates once their length `L` is known (余詰 detection).
//!
//! A depth-first enumeration of the lines of exactly `L` plies that end in mate, stopping at the
//! cap. Different move orders are different lines; each line is a distinct path, so none is
//! counted twice, and transpositions are never merged.
//!
//! Pruning is exact because `L` is the shortest length: a position reached at ply `p` has no
//! mate shorter than `L - p` (or the root would have one shorter than `L`). So a position whose
//! subtree holds no line of exactly `L - p` plies has no mate within `L - p` at all, which is
//! stored as a fact and prunes it wherever it is met again at that ply or deeper. Repetition
//! cuts hide nothing: a shortest line from a position that ran into a position above it would
//! give the root a mate shorter than `L`.

use super::helpmate::{Abort, Interrupt, POLL_INTERVAL};
use super::path::PathSet;
use super::tt::TranspositionTable;
use crate::shogi::movegen::{self, MoveList};
use crate::shogi::{Move, Position};
use std::time::Instant;

pub(crate) struct Counter<'a> {
    pub pos: &'a mut Position,
    pub tt: &'a TranspositionTable,
    pub path: &'a mut PathSet,
    pub cap: usize,
    pub lines: Vec<Vec<Move>>,
    pub nodes: u64,
    pub interrupt: Interrupt<'a>,
    pub abort: Option<Abort>,
    line: Vec<Move>,
    next_poll: u64,
}

impl<'a> Counter<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        pos: &'a mut Position,
        tt: &'a TranspositionTable,
        path: &'a mut PathSet,
        cap: usize,
        nodes: u64,
        interrupt: Interrupt<'a>,
    ) -> Counter<'a> {
        Counter {
            pos,
            tt,
            path,
            cap,
            lines: Vec::new(),
            nodes,
            interrupt,
            abort: None,
            line: Vec::new(),
            next_poll: nodes + POLL_INTERVAL,
        }
    }

    fn done(&self) -> bool {
        self.abort.is_some() || self.lines.len() >= self.cap
    }

    fn poll(&mut self) {
        self.nodes += 1;
        if self.nodes >= self.next_poll {
            self.next_poll = self.nodes + POLL_INTERVAL;
            if let Some(abort) = self.interrupt.check(Instant::now()) {
                self.abort = Some(abort);
            }
        }
    }

    /// Collects lines of exactly `remaining` plies from the current position (attacker to move
    /// when `remaining` is odd) that end in mate; returns how many were found below this node.
    pub fn count(&mut self, ply: u32, remaining: u32) -> usize {
        let key = self.pos.key();
        if self.tt.probe(key).is_some_and(|p| p.lb > remaining) {
            return 0;
        }
        let attacker = remaining % 2 == 1;
        let mut list = MoveList::new();
        if attacker {
            movegen::checks(self.pos, &mut list);
        } else {
            movegen::evasions(self.pos, &mut list);
        }
        if list.is_empty() && !attacker {
            // A mated defender cannot lie inside a shortest line; nothing to store either.
            return 0;
        }
        let mut found = 0;
        if remaining == 1 {
            for &m in list.iter() {
                self.pos.do_move(m);
                self.poll();
                let mate = !movegen::has_evasion(self.pos);
                self.pos.undo_move(m);
                if mate {
                    self.line.push(m);
                    self.lines.push(self.line.clone());
                    self.line.pop();
                    found += 1;
                    if self.done() {
                        return found;
                    }
                }
            }
        } else {
            self.path.insert(key, ply);
            for &m in list.iter() {
                let child = self.pos.key_after(m);
                if self.path.get(child).is_some()
                    || self.tt.probe(child).is_some_and(|p| p.lb > remaining - 1)
                {
                    continue;
                }
                self.pos.do_move(m);
                self.poll();
                self.line.push(m);
                found += self.count(ply + 1, remaining - 1);
                self.line.pop();
                self.pos.undo_move(m);
                if self.done() {
                    break;
                }
            }
            self.path.remove(key);
        }
        if found == 0 && self.abort.is_none() {
            // No mate within `remaining` plies (see the module notes): a fact.
            self.tt.store_fact(key, remaining + 2, None);
        }
        found
    }
}
