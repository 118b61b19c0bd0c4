//! Depth-first helpmate search with lower bounds: one deepening iteration.
//!
//! A helpmate is a shortest path in the graph of positions (checks for the attacker, evasions
//! for the defender) to a checkmated defender, so every node is an OR node. Each node returns a
//! lower bound on the length of any helpmate from it, `lb = min over children (1 + lb(child))`.
//!
//! Repetitions: a move back to a position on the current path is never needed for a shortest
//! mate, so it is cut; the result of a node whose subtree ran into a path position *above* it
//! then depends on the path. Such a node (or one that relied on such a result) stores only a
//! *conditional* bound `remaining + 2` for the running iteration. This is sound:
//!
//! * Inside the iteration, it prunes the position only when met again at the same or a deeper
//!   ply. If the root had a mate within the limit and yet the search failed, take among the
//!   positions searched to completion without success one with the smallest `ply + distance to
//!   mate`, finishing first among equals; the first move of its shortest mate leads to a position
//!   that is either searched (and fails, contradicting the choice), or pruned by an entry that
//!   contradicts the choice, or on the path at a lower ply — whose search then fails later with a
//!   smaller sum, again a contradiction. So the iteration finds a mate if one exists.
//! * If the iteration fails, the root has no mate within `limit`, so no position reached at
//!   `ply` has one within `limit - ply`: the conditional bound is then a fact.
//!
//! Beside it each such entry keeps an *if-failed* bound, where a cut to the position at ply `q`
//! counts as `limit + 2 - q` (what the failed iteration proves of that position); it is the bound
//! that becomes the fact. Bounds that depend on neither are facts at once. Facts stay valid in
//! later searches. The iteration stops at the first mate it finds.

use super::interrupt::{Abort, Interrupt, POLL_INTERVAL};
use super::path::PathSet;
use super::tt::{Probe, TranspositionTable, NEVER};
use crate::shogi::movegen::{self, MoveList};
use crate::shogi::RuleSet;
use crate::shogi::{Goal, Move, Position};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// No repetition cut below this node reached a position above it.
pub(crate) const NO_REPETITION: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
pub(crate) struct NodeResult {
    /// No helpmate from this node is shorter than this (plies); `NEVER` if none exists.
    pub lb: u32,
    /// A bound that holds if the running iteration fails (at least `lb` when the result is
    /// unconditional; possibly larger, as repetitions then count as their position's bound).
    pub if_failed: u32,
    /// Lowest ply of a path position that a repetition cut below this node ran into.
    pub rep: u32,
    /// The bound relies on a conditional entry of the running iteration.
    pub conditional: bool,
}

impl NodeResult {
    const fn fact(lb: u32) -> NodeResult {
        NodeResult {
            lb,
            if_failed: lb,
            rep: NO_REPETITION,
            conditional: false,
        }
    }

    fn known(p: &Probe) -> NodeResult {
        NodeResult {
            lb: p.lb,
            if_failed: p.if_failed,
            rep: NO_REPETITION,
            conditional: p.conditional,
        }
    }
}

/// A cheap bijective mix (for the helpers' order of children).
#[inline]
fn scramble(x: u64) -> u64 {
    let x = (x ^ (x >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^ (x >> 33)
}

#[inline]
fn plus_one(lb: u32) -> u32 {
    if lb == NEVER {
        NEVER
    } else {
        lb + 1
    }
}

/// A child of a node as the search walks it.
#[derive(Clone, Copy)]
pub(crate) struct Child {
    key: u128,
    /// Bound known for the child (0 when unknown).
    lb: u32,
    /// Bound for the child that holds if the running iteration fails.
    if_failed: u32,
    /// `lb` holds only if the running iteration fails.
    conditional: bool,
    mv: Move,
    /// The defender's replies after this check (counted at the root only; else 0).
    replies: u16,
}

/// Memory the search reuses from iteration to iteration (so that none is allocated per node or
/// per iteration).
pub(crate) struct Buffers {
    /// Moves from the root to the current node.
    line: Vec<Move>,
    /// Ordered child lists, one window per node on the current path.
    children: Vec<Child>,
    moves: MoveList,
}

impl Buffers {
    pub fn new() -> Buffers {
        Buffers {
            line: Vec::with_capacity(1 << 10),
            children: Vec::with_capacity(1 << 14),
            moves: MoveList::new(),
        }
    }
}

/// One iteration's search state. The position is played forward and back in place.
pub(crate) struct Iteration<'a> {
    pub pos: &'a mut Position,
    /// The table shared by all threads.
    pub tt: &'a TranspositionTable,
    /// A helper thread's own table for its conditional bounds, which hold for its own search
    /// only (None in the main search, which keeps them in the shared table, where the other
    /// threads ignore them).
    own: Option<&'a TranspositionTable>,
    /// Nonzero in a helper: varies the order of children with equal bounds, so that helpers
    /// and the main search walk different subtrees at the same time.
    seed: u64,
    /// Where a helper adds the nodes it has searched, at every poll.
    node_sink: Option<&'a AtomicU64>,
    reported_nodes: u64,
    pub path: &'a mut PathSet,
    buf: &'a mut Buffers,
    /// The mate found, if any (the iteration stops at the first).
    pub best: Option<Vec<Move>>,
    /// Longest mate (plies from the root) looked for.
    pub limit: u32,
    pub nodes: u64,
    pub node_budget: u64,
    pub interrupt: Interrupt<'a>,
    pub abort: Option<Abort>,
    next_poll: u64,
    /// Called with (nodes, hashfull) about once a second during long iterations.
    tick: &'a mut dyn FnMut(u64, u32),
    next_tick: Instant,
    /// Whose king the line ends by mating (H# unless [`Iteration::for_problem`] says otherwise).
    goal: Goal,
    /// The side to move at the root is the attacker (false: the defender moves first).
    root_attacker: bool,
    /// The rules moves follow (normal shogi unless [`Iteration::for_problem`] says otherwise).
    rules: RuleSet,
    /// Facts of positions with at most this many plies left never make the table grow (see
    /// [`Iteration::at_the_bound`]).
    cheap_plies: u32,
}

/// See [`Iteration::at_the_bound`].
const CHEAP_AT_THE_BOUND: u32 = 3;

const TICK_INTERVAL: Duration = Duration::from_secs(1);

impl<'a> Iteration<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        pos: &'a mut Position,
        tt: &'a TranspositionTable,
        path: &'a mut PathSet,
        buf: &'a mut Buffers,
        limit: u32,
        nodes: u64,
        node_budget: u64,
        interrupt: Interrupt<'a>,
        tick: &'a mut dyn FnMut(u64, u32),
    ) -> Iteration<'a> {
        Iteration {
            pos,
            tt,
            own: None,
            seed: 0,
            node_sink: None,
            reported_nodes: nodes,
            path,
            buf,
            best: None,
            limit,
            nodes,
            node_budget,
            interrupt,
            abort: None,
            next_poll: nodes + POLL_INTERVAL,
            tick,
            next_tick: Instant::now() + TICK_INTERVAL,
            goal: Goal::Helpmate,
            root_attacker: true,
            rules: RuleSet::PLAIN,
            cheap_plies: 0,
        }
    }

    /// This iteration searches to the stated bound (`--max-plies`), and no later one will
    /// reuse its facts: those of positions three plies or fewer from its limit, each found again
    /// by a search of three plies, take slots of the table but do not make it grow. Measured
    /// on performance.md's "none within N" problems (five alternated rounds, wall time): 6.7%
    /// less in all, u54_2NP 0.331 -> 0.271 s (+0.6% nodes), none more than 4% slower. Not in
    /// every iteration: the unbounded bushy problems took 17% more nodes and 7% more time.
    pub fn at_the_bound(&mut self) {
        self.cheap_plies = CHEAP_AT_THE_BOUND;
    }

    /// Searches for `goal` under `rules`, with the attacker (`root_attacker`) or the defender
    /// to move at the root.
    pub fn for_problem(&mut self, goal: Goal, root_attacker: bool, rules: RuleSet) {
        self.goal = goal;
        self.root_attacker = root_attacker;
        self.rules = rules;
    }

    #[inline]
    fn count_node(&mut self) {
        self.nodes += 1;
        if self.nodes >= self.next_poll {
            self.next_poll = self.nodes + POLL_INTERVAL;
            let now = Instant::now();
            if let Some(abort) = self
                .interrupt
                .check(now)
                .or((self.nodes >= self.node_budget).then_some(Abort::Budget))
            {
                self.abort = Some(abort);
            }
            if now >= self.next_tick {
                self.next_tick = now + TICK_INTERVAL;
                (self.tick)(self.nodes, self.tt.hashfull());
            }
            if let Some(sink) = self.node_sink {
                sink.fetch_add(self.nodes - self.reported_nodes, Ordering::Relaxed);
                self.reported_nodes = self.nodes;
            }
        }
    }

    /// Makes this iteration a helper's: conditional bounds go to (and come from) `own` only,
    /// from the shared table it takes facts only; children with equal bounds are ordered by
    /// `seed`; searched nodes are added to `node_sink`.
    pub fn as_helper(&mut self, own: &'a TranspositionTable, seed: u64, node_sink: &'a AtomicU64) {
        self.own = Some(own);
        self.seed = seed | 1;
        self.node_sink = Some(node_sink);
    }

    /// Nodes not yet added to the node sink.
    pub fn unreported_nodes(&self) -> u64 {
        self.nodes - self.reported_nodes
    }

    /// What is known of a position: in the main search, the shared table; in a helper, its own
    /// conditional bounds and the shared facts, whichever says more.
    #[inline]
    fn probe(&self, key: u128) -> Option<Probe> {
        let Some(own) = self.own else {
            return self.tt.probe(key);
        };
        let fact = self.tt.probe_fact(key);
        match own.probe(key) {
            Some(mine) if fact.is_none_or(|f| f.lb < mine.lb) => Some(Probe {
                if_failed: mine.if_failed.max(fact.map_or(0, |f| f.lb)),
                ..mine
            }),
            _ => fact,
        }
    }

    /// Stores a bound of the running iteration where this search's conditional bounds go.
    #[inline]
    fn store_conditional(&self, key: u128, lb: u32, if_failed: u32) {
        self.own
            .unwrap_or(self.tt)
            .store_conditional(key, lb, if_failed);
    }

    /// Generates the children (checks for the attacker, evasions for the defender, or just the
    /// remembered single live move) into a new window of `buf.children`, each with the bound
    /// known for it if `look_up` (else 0, and only its table line loaded), lowest bound first;
    /// returns the window's start.
    fn expand(
        &mut self,
        attacker: bool,
        single: Option<Move>,
        order_by_replies: bool,
        look_up: bool,
    ) -> usize {
        let list = &mut self.buf.moves;
        list.clear();
        match single {
            Some(m) => list.push(m),
            None if attacker => self.rules.checks(self.pos, list),
            // (In check, as always in H#, these are the evasions.)
            None => self.rules.legal(self.pos, list),
        }
        let start = self.buf.children.len();
        // Start every child's table load first, so that the cache misses overlap.
        for &mv in list.iter() {
            let key = self.pos.key_after(mv);
            self.tt.prefetch(key);
            self.buf.children.push(Child {
                key,
                lb: 0,
                if_failed: 0,
                conditional: false,
                mv,
                replies: 0,
            });
        }
        let looked_up = if look_up {
            start
        } else {
            self.buf.children.len()
        };
        for i in looked_up..self.buf.children.len() {
            if let Some(p) = self.probe(self.buf.children[i].key) {
                let child = &mut self.buf.children[i];
                child.lb = p.lb;
                child.if_failed = p.if_failed;
                child.conditional = p.conditional;
            }
        }
        if order_by_replies && single.is_none() {
            // At the root, among checks with equal bounds, those that leave the defender fewest
            // replies first: a cornered king is nearer a mate.
            let mut replies = MoveList::new();
            for child in &mut self.buf.children[start..] {
                self.pos.do_move(child.mv);
                replies.clear();
                self.rules.evasions(self.pos, &mut replies);
                self.pos.undo_move(child.mv);
                child.replies = replies.len() as u16;
            }
        }
        if self.seed == 0 {
            self.buf.children[start..].sort_unstable_by_key(|c| (c.lb, c.replies));
        } else {
            let seed = self.seed;
            self.buf.children[start..]
                .sort_unstable_by_key(|c| (c.lb, c.replies, scramble(c.key as u64 ^ seed)));
        }
        start
    }

    /// Searches the iteration from the root.
    pub fn root(&mut self) -> NodeResult {
        // The goal picks one of two copies of the search, compiled each for its own goal: plain
        // H# pays nothing for HS#.
        match self.goal {
            Goal::Helpmate => self.node::<false>(0, self.root_attacker),
            Goal::Selfmate => self.node::<true>(0, self.root_attacker),
        }
    }

    /// A node at `ply`: the attacker plays checks, the defender any legal move. The *scorer* is
    /// the side whose move can end the line (H#: the attacker; HS#, `SELF`: the defender); the
    /// other side, to move and checkmated, has reached the goal (`lb` 0).
    fn node<const SELF: bool>(&mut self, ply: u32, attacker: bool) -> NodeResult {
        self.count_node();
        let key = self.pos.key();
        let remaining = self.limit.saturating_sub(ply);
        let probe = self.probe(key);
        if let Some(p) = probe {
            if p.lb > remaining {
                return NodeResult::known(&p);
            }
        }
        let single = probe.and_then(|p| p.single);
        let scorer = attacker != SELF;
        if scorer && remaining < 3 {
            if remaining < 1 {
                return NodeResult::fact(1);
            }
            return if SELF {
                self.defender_frontier(key, single)
            } else {
                self.attacker_frontier(key, single)
            };
        }
        // Checks are ordered by the defender's replies at the root only (with 5 or more plies to
        // go). Measured: the 5-ply `ofm-139_5` of the bench fell from 5.9 M nodes to 0.76 M
        // (0.65 s to 0.05 s); ordering at plies 0-2, or wherever 5 plies remain, cost the 13-ply
        // reference problem more than it saved.
        let order_by_replies = !SELF && attacker && ply == 0 && remaining >= 5;
        // The other side's children within three plies of the limit are not looked up here, only
        // their table lines loaded: each child looks itself up when its turn comes (the same
        // answer, the line by then in the cache, where all of them at once made this node wait
        // for the first). Their order, by bound, matters little there: the scorer's moves
        // decide. Measured on the bushy set 10% less time (+18% nodes counted, the children
        // entered only to be looked up), on 受先ばか詰 "none within 8" 4-23% less, HS# the same.
        let look_up_children = scorer || remaining > 3;
        let start = self.expand(attacker, single, order_by_replies, look_up_children);
        let end = self.buf.children.len();
        if start == end {
            // No move: the goal if this side is checkmated and not the scorer (H#: the
            // defender; HS#: the attacker, whose having no check need not mean no move), else a
            // dead end.
            let goal = !scorer
                && self.rules.in_check(self.pos)
                && (!SELF || !self.rules.has_evasion(self.pos));
            if goal {
                return NodeResult::fact(0);
            }
            self.tt.store_fact(key, NEVER, None);
            return NodeResult::fact(NEVER);
        }
        // The fewest plies the goal can take from a node that is not it: the scorer's move, or
        // the other side's and then the scorer's. With less left, only the test above mattered.
        let shortest = if scorer { 1 } else { 2 };
        if remaining < shortest {
            self.buf.children.truncate(start);
            return NodeResult::fact(shortest);
        }
        self.path.insert(key, ply);
        let mut lb = NEVER;
        let mut if_failed = NEVER;
        let mut rep = NO_REPETITION;
        let mut conditional = false;
        let mut live = 0u32;
        let mut live_move = Move::NULL;
        for i in start..end {
            let Child {
                key: child_key,
                lb: known,
                if_failed: known_if_failed,
                conditional: known_conditional,
                mv: m,
                ..
            } = self.buf.children[i];
            if let Some(at) = self.path.get(child_key) {
                // Once the iteration has failed, the repeated position (reached at ply `at`)
                // has no mate within `limit - at`.
                rep = rep.min(at);
                if_failed = if_failed.min(self.limit + 3 - at);
                live += 1;
                continue;
            }
            let via = if plus_one(known) > remaining {
                // The known bound already rules this move out.
                conditional |= known_conditional;
                if_failed = if_failed.min(plus_one(known_if_failed));
                plus_one(known)
            } else {
                self.pos.do_move(m);
                self.buf.line.push(m);
                let child = self.node::<SELF>(ply + 1, !attacker);
                if child.lb == 0 {
                    self.record_mate();
                }
                self.buf.line.pop();
                self.pos.undo_move(m);
                if self.abort.is_some() {
                    self.path.remove(key);
                    self.buf.children.truncate(start);
                    return NodeResult::fact(shortest);
                }
                rep = rep.min(child.rep);
                conditional |= child.conditional;
                if_failed = if_failed.min(plus_one(child.if_failed));
                plus_one(child.lb)
            };
            lb = lb.min(via);
            if via != NEVER {
                live += 1;
                live_move = m;
            }
        }
        self.path.remove(key);
        self.buf.children.truncate(start);
        if rep >= ply && !conditional {
            let single = (live == 1).then_some(live_move);
            if remaining <= self.cheap_plies {
                self.tt.store_cheap_fact(key, lb, single);
            } else {
                self.tt.store_fact(key, lb, single);
            }
            return NodeResult::fact(lb);
        }
        // Inside this iteration the position may be pruned only when met again at this ply or
        // deeper (bound `remaining + 2`); once the iteration fails, `if_failed` holds.
        let if_failed = if_failed.max(remaining + 2);
        self.store_conditional(key, remaining + 2, if_failed);
        NodeResult {
            lb,
            if_failed,
            rep,
            conditional,
        }
    }

    /// An attacker node with one ply left: only a check that mates at once matters, so the
    /// children are neither ordered nor looked up, just tested for mate.
    fn attacker_frontier(&mut self, key: u128, single: Option<Move>) -> NodeResult {
        self.buf.moves.clear();
        let left_out = match single {
            Some(m) => {
                self.buf.moves.push(m);
                false
            }
            None => self
                .rules
                .checks_that_may_mate(self.pos, &mut self.buf.moves),
        };
        if self.buf.moves.is_empty() {
            // No check at all: no helpmate from here, ever. (With checks left out that could
            // not mate: at least 3 plies.)
            let lb = if left_out { 3 } else { NEVER };
            self.tt.store_cheap_fact(key, lb, None);
            return NodeResult::fact(lb);
        }
        // A mated position is never on the path (path positions all had a move), so no
        // repetition test is needed here. Checks that leave the king a flight square are not
        // played.
        // (After a check the defender is in check: mated when it has no evasion.)
        let rules = self.rules;
        let mate = if rules.fixed_powers() {
            let flights = movegen::KingFlights::of(self.pos);
            self.mate_among_moves(
                |pos, m| flights.may_be_covered_by(pos, m),
                |pos| !rules.has_evasion(pos),
            )
        } else {
            // (Flight squares need fixed powers.)
            self.mate_among_moves(|_, _| true, |pos| !rules.has_evasion(pos))
        };
        if mate {
            return NodeResult::fact(1);
        }
        // Every check leaves an evasion, so a mate needs at least 1 + 2 more plies.
        self.tt.store_cheap_fact(key, 3, single);
        NodeResult::fact(3)
    }

    /// HS#: a defender node with one or two plies left: only a move that checkmates the
    /// attacker at once matters, so the moves are neither ordered nor looked up.
    fn defender_frontier(&mut self, key: u128, single: Option<Move>) -> NodeResult {
        self.buf.moves.clear();
        match single {
            Some(m) => self.buf.moves.push(m),
            None => self.rules.legal(self.pos, &mut self.buf.moves),
        }
        if self.buf.moves.is_empty() {
            self.tt.store_cheap_fact(key, NEVER, None);
            return NodeResult::fact(NEVER);
        }
        // Only a reply that checks can mate.
        let rules = self.rules;
        if self.mate_among_moves(
            |pos, m| rules.gives_check(pos, m),
            |pos| rules.is_checkmate(pos),
        ) {
            return NodeResult::fact(1);
        }
        // No move mates: the goal needs at least this move, a check and a mating move.
        self.tt.store_cheap_fact(key, 3, single);
        NodeResult::fact(3)
    }

    /// Plays the moves of `buf.moves` that `may_mate` lets through until one leaves the side to
    /// move `mated`; then records its line and returns true.
    #[inline(always)]
    fn mate_among_moves(
        &mut self,
        may_mate: impl Fn(&Position, Move) -> bool,
        mated: impl Fn(&Position) -> bool,
    ) -> bool {
        for i in 0..self.buf.moves.len() {
            let m = self.buf.moves[i];
            if !may_mate(self.pos, m) {
                continue;
            }
            self.pos.do_move(m);
            self.nodes += 1;
            let mate = mated(self.pos);
            if mate {
                self.buf.line.push(m);
                self.record_mate();
                self.buf.line.pop();
            }
            self.pos.undo_move(m);
            if mate {
                return true;
            }
        }
        false
    }

    /// The current line ends in mate: keep it and end the iteration.
    fn record_mate(&mut self) {
        self.best = Some(self.buf.line.clone());
        self.abort = Some(Abort::Found);
    }
}
