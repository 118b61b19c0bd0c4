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
//!
//! Lines are met in generation order, whatever move order or thread found the mate: the lines a
//! capped count keeps, and so the solution and alternative shown, are then the same at every
//! thread count and from run to run. (Following the mate found first, as was tried, made the
//! count cheaper on two threads — `9/9/9/9/9/9/9/9/5k3 b S4NP2r2b4g3s4l17p 1` at cap 2: 14
//! nodes against 124 K — but which helper found it first decided the lines shown.)
//!
//! On several threads ([`count_in_pool`]) the lines are split by their first two plies: each
//! (check, evasion) pair is a task with its own position and path, sharing the table, whose
//! entries written here are facts (above). Each task keeps its first `cap` lines; in task order
//! they are the lines one thread meets first, so the lines and the count are the same whatever
//! the threads.

use super::interrupt::{Abort, Interrupt, POLL_INTERVAL};
use super::path::PathSet;
use super::tt::TranspositionTable;
use crate::shogi::movegen::MoveList;
use crate::shogi::{Goal, Move, Position, RuleSet};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
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
    /// The count ends (`Abort::Budget`) at this many nodes.
    node_limit: u64,
    /// On several threads: this task's number, and the first task number no longer needed
    /// (see [`count_in_pool`]).
    cutoff: Option<(usize, &'a AtomicUsize)>,
    /// Whose king the lines end by mating.
    goal: Goal,
    /// The rules moves follow.
    rules: RuleSet,
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
            node_limit: u64::MAX,
            cutoff: None,
            goal: Goal::Helpmate,
            rules: RuleSet::PLAIN,
        }
    }

    /// Counts lines under `rules` (normal shogi unless told).
    pub fn with_rules(mut self, rules: RuleSet) -> Self {
        self.rules = rules;
        self
    }

    /// Counts lines that end in `goal` (H# unless told).
    pub fn with_goal(mut self, goal: Goal) -> Self {
        self.goal = goal;
        self
    }

    /// Ends the count (`Abort::Budget`, nothing lost but the lines) once it has searched
    /// `nodes` nodes more.
    pub fn with_node_budget(mut self, nodes: u64) -> Self {
        self.node_limit = self.nodes.saturating_add(nodes);
        self.next_poll = self.next_poll.min(self.node_limit);
        self
    }

    fn done(&self) -> bool {
        self.abort.is_some() || self.lines.len() >= self.cap
    }

    fn poll(&mut self) {
        self.nodes += 1;
        if self.nodes >= self.next_poll {
            self.next_poll = (self.nodes + POLL_INTERVAL).min(self.node_limit.max(self.nodes + 1));
            if self.nodes >= self.node_limit {
                self.abort = Some(Abort::Budget);
            } else if let Some(abort) = self.interrupt.check(Instant::now()) {
                self.abort = Some(abort);
            } else if let Some((task, cutoff)) = self.cutoff {
                if task >= cutoff.load(Ordering::Relaxed) {
                    // Earlier tasks hold enough lines already.
                    self.abort = Some(Abort::FoundElsewhere);
                }
            }
        }
    }

    /// Collects lines of exactly `remaining` plies from the current position that end in the
    /// goal; returns how many were found below this node. The side whose move ends a line (H#:
    /// the attacker, HS#: the defender) is to move when `remaining` is odd.
    pub fn count(&mut self, ply: u32, remaining: u32) -> usize {
        let key = self.pos.key();
        if self.tt.probe(key).is_some_and(|p| p.lb > remaining) {
            return 0;
        }
        let selfmate = self.goal == Goal::Selfmate;
        let attacker = (remaining % 2 == 1) != selfmate;
        let mut list = MoveList::new();
        if attacker {
            self.rules.checks(self.pos, &mut list);
        } else {
            self.rules.legal(self.pos, &mut list);
        }
        if list.is_empty() && !attacker {
            // A defender without a move (mated, in H#) cannot lie inside a line; nothing to
            // store either.
            return 0;
        }
        let mut found = 0;
        if remaining == 1 {
            for &m in list.iter() {
                self.pos.do_move(m);
                self.poll();
                // (H#: the defender is in check after a check.)
                let mate = if selfmate {
                    self.rules.is_checkmate(self.pos)
                } else {
                    !self.rules.has_evasion(self.pos)
                };
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

/// The shortest lines found and whether the count is complete (not cut short by `stop` or the
/// time limit), with the nodes searched.
pub(crate) struct Counted {
    pub lines: Vec<Vec<Move>>,
    pub complete: bool,
    pub nodes: u64,
}

/// A line's first two plies, counted on one thread.
struct Task {
    check: Move,
    evasion: Move,
    /// The key after the check (on the path below).
    after_check: u128,
}

/// What a task found.
struct TaskResult {
    lines: Vec<Vec<Move>>,
    nodes: u64,
    abort: Option<Abort>,
}

/// The tasks finished so far, so that later ones stop once earlier ones hold `cap` lines.
struct Finished {
    /// How many lines each task found, once it has finished.
    lines: Vec<Option<usize>>,
    /// Tasks before this one are all finished...
    prefix: usize,
    /// ...with this many lines.
    prefix_lines: usize,
}

/// Every shortest line of `len` plies (`len` >= 3) from `root`, up to `cap`, on the `pool`'s
/// threads (see the module notes).
pub(crate) fn count_in_pool(
    pool: &rayon::ThreadPool,
    root: &Position,
    tt: &TranspositionTable,
    (len, goal, rules): (u32, Goal, RuleSet),
    cap: usize,
    interrupt: Interrupt,
) -> Counted {
    debug_assert!(len >= 3);
    let root_key = root.key();
    let mut tasks = Vec::new();
    let mut nodes = 0;
    // The root's side is the attacker when the side ending the lines is to move at odd
    // remaining plies (see `Counter::count`).
    let root_attacker = (len % 2 == 1) != (goal == Goal::Selfmate);
    let moves_of = |pos: &Position, attacker: bool, list: &mut MoveList| {
        if attacker {
            rules.checks(pos, list)
        } else {
            rules.legal(pos, list)
        }
    };
    if tt.probe(root_key).is_none_or(|p| p.lb <= len) {
        let mut pos = root.clone();
        let mut checks = MoveList::new();
        moves_of(&pos, root_attacker, &mut checks);
        for &check in checks.iter() {
            let after_check = pos.key_after(check);
            if after_check == root_key || tt.probe(after_check).is_some_and(|p| p.lb > len - 1) {
                continue;
            }
            pos.do_move(check);
            nodes += 1;
            let mut evasions = MoveList::new();
            moves_of(&pos, !root_attacker, &mut evasions);
            for &evasion in evasions.iter() {
                let key = pos.key_after(evasion);
                if key == root_key
                    || key == after_check
                    || tt.probe(key).is_some_and(|p| p.lb > len - 2)
                {
                    continue;
                }
                tasks.push(Task {
                    check,
                    evasion,
                    after_check,
                });
            }
            pos.undo_move(check);
        }
    }
    let cutoff = AtomicUsize::new(usize::MAX);
    let finished = Mutex::new(Finished {
        lines: vec![None; tasks.len()],
        prefix: 0,
        prefix_lines: 0,
    });
    // The threads take the tasks in order from a shared counter, so that the first tasks, whose
    // lines are the ones kept, are counted first and the cutoff stops the rest early. (Split
    // into halves, as a parallel iterator does, the second thread started in the middle of the
    // list, and on a problem whose first task held every line it counted some 150 K nodes for
    // nothing where one thread needed 245: `9/9/9/9/9/9/9/9/5k3 b S4NP2r2b4g3s4l17p 1`.)
    let next_task = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<TaskResult>>> = tasks.iter().map(|_| Mutex::new(None)).collect();
    let count_task = |(pos, path): &mut (Position, PathSet), i: usize, task: &Task| {
        pos.clone_from(root);
        pos.do_move(task.check);
        pos.do_move(task.evasion);
        path.clear();
        path.insert(root_key, 0);
        path.insert(task.after_check, 1);
        if i >= cutoff.load(Ordering::Relaxed) {
            return TaskResult {
                lines: Vec::new(),
                nodes: 0,
                abort: Some(Abort::FoundElsewhere),
            };
        }
        // Each task polls from its own first node: tasks of fewer nodes than a poll's
        // interval would, one after another, never look.
        if let Some(abort) = interrupt.check(Instant::now()) {
            return TaskResult {
                lines: Vec::new(),
                nodes: 0,
                abort: Some(abort),
            };
        }
        let mut counter = Counter::new(pos, tt, path, cap, 0, interrupt)
            .with_goal(goal)
            .with_rules(rules);
        counter.cutoff = Some((i, &cutoff));
        counter.line = vec![task.check, task.evasion];
        counter.count(2, len - 2);
        let result = TaskResult {
            // (The evasion: the check was counted above.)
            nodes: counter.nodes + 1,
            abort: counter.abort,
            lines: std::mem::take(&mut counter.lines),
        };
        if result.abort.is_none() {
            finish(&finished, &cutoff, i, result.lines.len(), cap);
        }
        result
    };
    let worker = || {
        let mut state = (root.clone(), PathSet::new());
        loop {
            let i = next_task.fetch_add(1, Ordering::Relaxed);
            let Some(task) = tasks.get(i) else { break };
            *results[i].lock() = Some(count_task(&mut state, i, task));
        }
    };
    pool.in_place_scope(|scope| {
        for _ in 1..pool.current_num_threads().min(tasks.len()) {
            scope.spawn(|_| worker());
        }
        worker();
    });
    let results: Vec<TaskResult> = results
        .into_iter()
        .map(|r| r.into_inner().expect("every task was taken"))
        .collect();
    let mut counted = Counted {
        lines: Vec::new(),
        complete: true,
        nodes,
    };
    let cutoff = cutoff.into_inner();
    for (i, result) in results.into_iter().enumerate() {
        counted.nodes += result.nodes;
        if i >= cutoff || counted.lines.len() >= cap || !counted.complete {
            continue;
        }
        counted.lines.extend(result.lines);
        counted.complete = !matches!(result.abort, Some(Abort::Stopped | Abort::Timeout));
    }
    counted.lines.truncate(cap);
    counted
}

/// Records that task `task` finished with `lines` lines, and moves the cutoff once it or the
/// tasks before it hold `cap` lines.
fn finish(finished: &Mutex<Finished>, cutoff: &AtomicUsize, task: usize, lines: usize, cap: usize) {
    if lines >= cap {
        cutoff.fetch_min(task + 1, Ordering::Relaxed);
    }
    let mut f = finished.lock();
    f.lines[task] = Some(lines);
    while let Some(Some(n)) = f.lines.get(f.prefix).copied() {
        f.prefix += 1;
        f.prefix_lines += n;
        if f.prefix_lines >= cap {
            cutoff.fetch_min(f.prefix, Ordering::Relaxed);
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    /// A count stopped before it starts reports itself incomplete, however small its tasks: each
    /// task looks at the interrupt before its first node (tasks of fewer nodes than a poll's
    /// interval once ran to their end one after another, stopped or not).
    #[test]
    fn a_stopped_count_in_a_pool_is_incomplete() {
        let root = Position::from_sfen(
            "l6ss/1KB1r2bL/1GL3ss1/k1l3p1P/1nnn1p1P1/Pn2p1P2/2PP1P3/1P2P4/9 b r3g6p 1",
        )
        .unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        for stopped in [false, true] {
            // A table of its own: the first count's facts would prune the second's tasks.
            let tt = TranspositionTable::new_lazy(1).unwrap();
            let stop = AtomicBool::new(stopped);
            let interrupt = Interrupt {
                stop: &stop,
                deadline: None,
                mate_elsewhere: None,
            };
            // Five plies: the tasks (check, evasion) are a few hundred nodes each.
            let counted = count_in_pool(
                &pool,
                &root,
                &tt,
                (5, Goal::Helpmate, RuleSet::PLAIN),
                10,
                interrupt,
            );
            assert_eq!(counted.complete, !stopped, "stopped: {stopped}");
            assert!(counted.lines.is_empty(), "this problem has no mate in 5");
        }
    }
}
