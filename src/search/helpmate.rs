//! Depth-first helpmate search with lower bounds, the core of each deepening iteration.
//!
//! A helpmate is a shortest path in the graph of positions (checks for the attacker, evasions
//! for the defender) to a checkmated defender, so every node is an OR node. Each node returns a
//! lower bound on the length of any helpmate from it, `lb = min over children (1 + lb(child))`,
//! together with the lowest path ply its result depended on through a repetition cut. A bound is
//! stored in the transposition table only when it does not depend on the path above the node, so
//! every entry is a fact about the position.
//!
//! Within one iteration the search is depth-first branch and bound: it looks for a mate of at most
//! `limit` plies and, having found one of length `L`, lowers `limit` to `L - 2` and carries on,
//! so an iteration ends with the shortest mate within its starting limit, or a bound above it.

use super::path::PathSet;
use super::tt::{TranspositionTable, NEVER};
use crate::shogi::movegen::{self, MoveList};
use crate::shogi::{Move, Position};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// No repetition cut below this node reached a position above it.
pub(crate) const NO_REPETITION: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
pub(crate) struct NodeResult {
    /// No helpmate from this node is shorter than this (plies); `NEVER` if none exists.
    pub lb: u32,
    /// Lowest ply of a path position that a repetition cut below this node ran into.
    pub rep: u32,
}

impl NodeResult {
    const fn fact(lb: u32) -> NodeResult {
        NodeResult {
            lb,
            rep: NO_REPETITION,
        }
    }
}

/// Why an iteration stopped before finishing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Abort {
    /// `stop` from the user (or the GUI).
    Stopped,
    /// The time limit passed.
    Timeout,
    /// The iteration used more nodes than the deepening schedule allowed it.
    Budget,
}

#[inline]
fn plus_one(lb: u32) -> u32 {
    if lb == NEVER {
        NEVER
    } else {
        lb + 1
    }
}

/// One iteration's search state. The position is played forward and back in place.
pub(crate) struct Iteration<'a> {
    pub pos: &'a mut Position,
    pub tt: &'a mut TranspositionTable,
    pub path: &'a mut PathSet,
    /// Moves from the root to the current node.
    pub line: Vec<Move>,
    /// Shortest mate found so far in this iteration.
    pub best: Option<Vec<Move>>,
    /// Longest mate (plies from the root) still of interest.
    pub limit: u32,
    pub nodes: u64,
    pub node_budget: u64,
    pub stop: &'a AtomicBool,
    pub deadline: Option<Instant>,
    pub abort: Option<Abort>,
    next_poll: u64,
    /// Called with (nodes, hashfull) about once a second during long iterations.
    tick: &'a mut dyn FnMut(u64, u32),
    next_tick: Instant,
    /// Scratch space for ordered child lists, one window per active node.
    scratch: Vec<(u32, Move)>,
}

const POLL_INTERVAL: u64 = 4096;
const TICK_INTERVAL: Duration = Duration::from_secs(1);

impl<'a> Iteration<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        pos: &'a mut Position,
        tt: &'a mut TranspositionTable,
        path: &'a mut PathSet,
        limit: u32,
        nodes: u64,
        node_budget: u64,
        stop: &'a AtomicBool,
        deadline: Option<Instant>,
        tick: &'a mut dyn FnMut(u64, u32),
    ) -> Iteration<'a> {
        Iteration {
            pos,
            tt,
            path,
            line: Vec::with_capacity(1024),
            best: None,
            limit,
            nodes,
            node_budget,
            stop,
            deadline,
            abort: None,
            next_poll: nodes + POLL_INTERVAL,
            tick,
            next_tick: Instant::now() + TICK_INTERVAL,
            scratch: Vec::with_capacity(1 << 16),
        }
    }

    #[inline]
    fn count_node(&mut self) {
        self.nodes += 1;
        if self.nodes >= self.next_poll {
            self.next_poll = self.nodes + POLL_INTERVAL;
            let now = Instant::now();
            if self.stop.load(Ordering::Relaxed) {
                self.abort = Some(Abort::Stopped);
            } else if self.deadline.is_some_and(|d| now >= d) {
                self.abort = Some(Abort::Timeout);
            } else if self.nodes >= self.node_budget {
                self.abort = Some(Abort::Budget);
            }
            if now >= self.next_tick {
                self.next_tick = now + TICK_INTERVAL;
                (self.tick)(self.nodes, self.tt.hashfull());
            }
        }
    }

    /// Generates the children (checks for the attacker, evasions for the defender, or just the
    /// remembered single live move) into a new scratch window, each with the bound known for it
    /// (0 when unknown), lowest bound first; returns the window's start.
    ///
    /// Kept out of line so that the move list's stack space is not part of every recursive frame.
    #[inline(never)]
    fn expand(&mut self, attacker: bool, single: Option<Move>) -> usize {
        let mut list = MoveList::new();
        match single {
            Some(m) => list.push(m),
            None if attacker => movegen::checks(self.pos, &mut list),
            None => movegen::evasions(self.pos, &mut list),
        }
        let start = self.scratch.len();
        let mut keys = [0u128; movegen::MAX_MOVES];
        for (i, &m) in list.iter().enumerate() {
            keys[i] = self.pos.key_after(m);
            self.tt.prefetch(keys[i]);
        }
        for (i, &m) in list.iter().enumerate() {
            self.scratch.push((self.tt.lower_bound(keys[i]), m));
        }
        self.scratch[start..].sort_unstable_by_key(|&(lb, _)| lb);
        start
    }

    /// The attacker (side to move at the root) to move at `ply`; the last ply is a check.
    pub fn attacker(&mut self, ply: u32) -> NodeResult {
        self.count_node();
        let key = self.pos.key();
        let remaining = self.limit.saturating_sub(ply);
        let probe = self.tt.probe(key);
        if let Some(p) = probe {
            if p.lb > remaining {
                return NodeResult::fact(p.lb);
            }
        }
        if remaining < 1 {
            return NodeResult::fact(1);
        }
        if remaining < 3 {
            return self.attacker_frontier(key, probe.and_then(|p| p.single));
        }
        let start = self.expand(true, probe.and_then(|p| p.single));
        let end = self.scratch.len();
        if start == end {
            self.tt.store(key, NEVER, None);
            return NodeResult::fact(NEVER);
        }
        self.path.insert(key, ply);
        let mut lb = NEVER;
        let mut rep = NO_REPETITION;
        let mut live = 0u32;
        let mut live_move = Move::NULL;
        let mut complete = true;
        for i in start..end {
            let (known, m) = self.scratch[i];
            let remaining = self.limit.saturating_sub(ply);
            if remaining < 1 {
                // A mate found elsewhere made this node too deep to matter.
                complete = false;
                break;
            }
            let child_key = self.pos.key_after(m);
            if let Some(at) = self.path.get(child_key) {
                rep = rep.min(at);
                live += 1;
                continue;
            }
            let via = if plus_one(known) > remaining {
                // The stored bound already rules this check out.
                plus_one(known)
            } else {
                self.pos.do_move(m);
                self.line.push(m);
                let child = self.defender(ply + 1);
                if child.lb == 0 {
                    self.record_mate();
                }
                self.line.pop();
                self.pos.undo_move(m);
                if self.abort.is_some() {
                    self.path.remove(key);
                    self.scratch.truncate(start);
                    return NodeResult::fact(1);
                }
                rep = rep.min(child.rep);
                plus_one(child.lb)
            };
            lb = lb.min(via);
            if via != NEVER {
                live += 1;
                live_move = m;
            }
        }
        self.path.remove(key);
        self.scratch.truncate(start);
        if !complete {
            return NodeResult::fact(1);
        }
        if rep >= ply {
            let single = (live == 1 && rep == NO_REPETITION).then_some(live_move);
            self.tt.store(key, lb, single);
        }
        NodeResult { lb, rep }
    }

    /// An attacker node with one ply left: only a check that mates at once matters, so the
    /// children are neither ordered nor looked up, just tested for mate.
    #[inline(never)]
    fn attacker_frontier(&mut self, key: u128, single: Option<Move>) -> NodeResult {
        let mut list = MoveList::new();
        match single {
            Some(m) => list.push(m),
            None => movegen::checks(self.pos, &mut list),
        }
        if list.is_empty() {
            self.tt.store(key, NEVER, None);
            return NodeResult::fact(NEVER);
        }
        // A mated position is never on the path (path positions all had a move), so no
        // repetition test is needed here.
        for &m in list.iter() {
            self.pos.do_move(m);
            self.nodes += 1;
            let mate = !movegen::has_evasion(self.pos);
            if mate {
                self.line.push(m);
                self.record_mate();
                self.line.pop();
            }
            self.pos.undo_move(m);
            if mate {
                return NodeResult::fact(1);
            }
        }
        // Every check leaves an evasion, so a mate needs at least 1 + 2 more plies.
        self.tt.store(key, 3, single);
        NodeResult::fact(3)
    }

    /// The defender to move at `ply`, in check and not mated... or mated (then `lb` is 0).
    fn defender(&mut self, ply: u32) -> NodeResult {
        self.count_node();
        let key = self.pos.key();
        let remaining = self.limit.saturating_sub(ply);
        let probe = self.tt.probe(key);
        if let Some(p) = probe {
            if p.lb > remaining {
                return NodeResult::fact(p.lb);
            }
        }
        let start = self.expand(false, probe.and_then(|p| p.single));
        let end = self.scratch.len();
        if start == end {
            return NodeResult::fact(0); // checkmate
        }
        if remaining < 2 {
            self.scratch.truncate(start);
            return NodeResult::fact(2);
        }
        self.path.insert(key, ply);
        let mut lb = NEVER;
        let mut rep = NO_REPETITION;
        let mut live = 0u32;
        let mut live_move = Move::NULL;
        let mut complete = true;
        for i in start..end {
            let (known, m) = self.scratch[i];
            let remaining = self.limit.saturating_sub(ply);
            if remaining < 2 {
                complete = false;
                break;
            }
            let child_key = self.pos.key_after(m);
            if let Some(at) = self.path.get(child_key) {
                rep = rep.min(at);
                live += 1;
                continue;
            }
            let via = if plus_one(known) > remaining {
                plus_one(known)
            } else {
                self.pos.do_move(m);
                self.line.push(m);
                let child = self.attacker(ply + 1);
                self.line.pop();
                self.pos.undo_move(m);
                if self.abort.is_some() {
                    self.path.remove(key);
                    self.scratch.truncate(start);
                    return NodeResult::fact(2);
                }
                rep = rep.min(child.rep);
                plus_one(child.lb)
            };
            lb = lb.min(via);
            if via != NEVER {
                live += 1;
                live_move = m;
            }
        }
        self.path.remove(key);
        self.scratch.truncate(start);
        if !complete {
            return NodeResult::fact(2);
        }
        if rep >= ply {
            let single = (live == 1 && rep == NO_REPETITION).then_some(live_move);
            self.tt.store(key, lb, single);
        }
        NodeResult { lb, rep }
    }

    /// The current line ends in mate: keep it and look only for shorter ones from now on.
    fn record_mate(&mut self) {
        let len = self.line.len() as u32;
        if self.best.as_ref().is_none_or(|b| (b.len() as u32) > len) {
            self.best = Some(self.line.clone());
        }
        self.limit = self.limit.min(len.saturating_sub(2));
    }
}
