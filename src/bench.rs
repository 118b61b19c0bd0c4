//! `kyozume bench`: solves a fixed suite of helpmates and reports nodes, time and speed. This is
//! how the engine's speed is measured (tests never time anything).

use crate::peak_memory;
use crate::search::{verify_helpmate, Limits, Outcome, Solver};
use crate::shogi::movegen::MoveList;
use crate::shogi::Position;
use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// The suite: problems copied from the shared reference data with their source column.
const SUITE: &str = include_str!("../bench/suite.tsv");

/// The suite's groups (`bench/suite.tsv`'s first column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// Short and medium problems: `kyozume bench`.
    Default,
    /// 1,000+ plies and hard ones: `kyozume bench --long`.
    Long,
    /// Lone-king problems of 11-17 plies with a bushy tree: how deepening and its helper
    /// threads behave where a breadth-first pass does not pay (`kyozume bench --bushy`).
    Bushy,
}

impl Group {
    fn name(self) -> &'static str {
        match self {
            Group::Default => "default",
            Group::Long => "long",
            Group::Bushy => "bushy",
        }
    }
}

pub struct BenchProblem {
    pub group: Group,
    pub name: &'static str,
    pub sfen: &'static str,
    pub plies: u32,
}

pub fn suite() -> Vec<BenchProblem> {
    SUITE
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("group\t") && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&'static str> = l.split('\t').collect();
            BenchProblem {
                group: match f[0] {
                    "long" => Group::Long,
                    "bushy" => Group::Bushy,
                    _ => Group::Default,
                },
                name: f[1],
                sfen: f[2],
                plies: f[3].parse().expect("plies in bench/suite.tsv"),
            }
        })
        .collect()
}

pub struct BenchOptions {
    pub group: Group,
    pub hash_mb: usize,
    /// Shortest solutions to count (1: the length alone), as `SolutionLimit`.
    pub solutions: usize,
    /// The thread counts to run. With more than one (or more than one round), the runs
    /// alternate: each round solves each problem once at each count, back to back (see
    /// [`counts_in_round`]).
    pub threads: Vec<usize>,
    /// Rounds of alternated runs (see `threads`).
    pub rounds: usize,
    pub time_limit: Option<Duration>,
    /// Only problems whose name contains one of these (all problems if empty).
    pub filters: Vec<String>,
    /// Comparing one thread with more: each round also solves every problem twice at once,
    /// at one thread each, on solvers of their own (see `write_comparison`).
    pub pair: bool,
}

impl BenchOptions {
    /// Alternated runs compared, rather than one run listed problem by problem.
    fn compares(&self) -> bool {
        self.threads.len() > 1 || self.rounds > 1
    }
}

/// One problem solved once.
struct Solved {
    secs: f64,
    nodes: u64,
    /// The length found, or `-` (not solved within the limits), marked WRONG when wrong.
    found: String,
    /// Solved, with the published length and a line that replays.
    right: bool,
    /// An answer that is not the published one (not solving within the limits is not wrong).
    wrong: bool,
    peak_mb: Option<u64>,
}

/// Runs the suite, printing one line per problem and a total, or, comparing thread counts
/// over rounds (see `BenchOptions`), each round's totals and then the medians. Returns false if
/// any answer was wrong (a different length than published, or a line that does not replay).
pub fn run(options: &BenchOptions, out: &mut dyn Write) -> std::io::Result<bool> {
    let problems: Vec<BenchProblem> = suite()
        .into_iter()
        .filter(|p| p.group == options.group)
        .filter(|p| {
            options.filters.is_empty()
                || options.filters.iter().any(|f| p.name.contains(f.as_str()))
        })
        .collect();
    if options.threads.is_empty() || options.rounds == 0 {
        return Err(std::io::Error::other(
            "bench needs at least one thread count and one round",
        ));
    }
    if options.pair && options.threads != [1, 2] {
        return Err(std::io::Error::other(
            "--pair compares one thread with two: use it with --threads 1,2",
        ));
    }
    if problems.is_empty() {
        return Err(std::io::Error::other(format!(
            "no {} problem's name contains {}",
            options.group.name(),
            options.filters.join(" or ")
        )));
    }
    if options.compares() {
        run_compared(options, &problems, out)
    } else {
        run_listed(options, &problems, out)
    }
}

/// One run at one thread count, problem by problem.
fn run_listed(
    options: &BenchOptions,
    problems: &[BenchProblem],
    out: &mut dyn Write,
) -> std::io::Result<bool> {
    let mut solver = first_solver(options)?;
    let threads = options.threads[0];
    writeln!(
        out,
        "{:<40} {:>7} {:>7} {:>8} {:>7} {:>14} {:>10} {:>12} {:>9}",
        "problem",
        "plies",
        "found",
        "hash(MB)",
        "threads",
        "nodes",
        "time(s)",
        "nodes/s",
        "peak(MB)"
    )?;
    let mut rows = Vec::new();
    for p in problems {
        let r = solve_one(&mut solver, p, options, threads)?;
        let peak = r.peak_mb.map_or("-".to_string(), |mb| mb.to_string());
        writeln!(
            out,
            "{:<40} {:>7} {:>7} {:>8} {:>7} {:>14} {:>10.3} {:>12.0} {:>9}",
            p.name,
            p.plies,
            r.found,
            options.hash_mb,
            threads,
            r.nodes,
            r.secs,
            r.nodes as f64 / r.secs.max(1e-9),
            peak
        )?;
        rows.push(r);
    }
    writeln!(out, "{}", total_line(&rows))?;
    Ok(!rows.iter().any(|r| r.wrong))
}

/// Alternated rounds at each thread count (and the pair), then the comparison table.
fn run_compared(
    options: &BenchOptions,
    problems: &[BenchProblem],
    out: &mut dyn Write,
) -> std::io::Result<bool> {
    let mut solver = first_solver(options)?;
    // times[problem][column][round]: a column for each thread count, then the pair's.
    let columns = options.threads.len() + usize::from(options.pair);
    let mut times = vec![vec![Vec::new(); columns]; problems.len()];
    let mut totals = vec![Vec::new(); columns];
    let mut all_right = true;
    let mut pair_solvers = Vec::new();
    if options.pair {
        for _ in 0..2 {
            pair_solvers.push(first_solver(options)?);
        }
    }
    // A round's rows of one column: their times kept, their total line printed.
    let mut record = |column: usize, rows: &[Solved], what: String| {
        for (i, r) in rows.iter().enumerate() {
            times[i][column].push(r.secs);
        }
        totals[column].push(rows.iter().map(|r| r.secs).sum::<f64>());
        writeln!(out, "{what}: {}", total_line(rows))
    };
    for round in 1..=options.rounds {
        let of = options.rounds;
        // rows[column][problem]
        let mut rows: Vec<Vec<Solved>> = (0..columns).map(|_| Vec::new()).collect();
        for p in problems {
            for k in counts_in_round(round, options.threads.len()) {
                let solved = solve_one(&mut solver, p, options, options.threads[k])?;
                all_right &= !solved.wrong;
                rows[k].push(solved);
            }
            if let [a, b] = &mut pair_solvers[..] {
                let (x, y) = solve_twice_at_once((a, b), p, options)?;
                all_right &= !x.wrong && !y.wrong;
                rows[columns - 1].push(if x.secs >= y.secs { x } else { y });
            }
        }
        for (k, &threads) in options.threads.iter().enumerate() {
            record(k, &rows[k], format!("round {round}/{of} threads {threads}"))?;
        }
        if options.pair {
            let what =
                format!("round {round}/{of} two one-thread solves at once (the slower of each)");
            record(columns - 1, &rows[columns - 1], what)?;
        }
    }
    write_comparison(options, problems, &times, &totals, out)?;
    Ok(all_right)
}

/// The order a round runs the thread counts in, for each problem: as given in odd rounds,
/// reversed in even ones. A problem's runs at each count come back to back, seconds apart, so
/// that a round's ratio of them sees the shared machine in one state (run count after count,
/// the whole list at one and then at two threads, they were up to a minute apart on the long
/// problems); reversing every other round keeps whatever the order itself does (a cache or an
/// allocator left warm by the run before) from favouring one count.
fn counts_in_round(round: usize, counts: usize) -> Vec<usize> {
    if round % 2 == 1 {
        (0..counts).collect()
    } else {
        (0..counts).rev().collect()
    }
}

/// The comparison table: each problem's median time at each thread count and, for every count
/// after the first, the median over rounds of that round's first-count time over this one's
/// (the speed-up, with its lowest and highest: a round's runs of one problem come back to back
/// (see [`counts_in_round`]), so the ratio cancels more of a shared machine's drift than the
/// ratio of medians does).
///
/// With the pair (`BenchOptions::pair`, one thread against two): what two CPUs give two
/// separate one-thread solves that round, the *ceiling*, twice the one-thread time over the
/// slower of the pair's (2 where running side by side costs nothing; a shared or busy machine
/// gives less), and the *efficiency* of the two-thread solve, its speed-up over the ceiling (1:
/// as good as two separate solves; above 1 where two separate solves crowd each other's caches
/// more than one solve's two threads do).
fn write_comparison(
    options: &BenchOptions,
    problems: &[BenchProblem],
    times: &[Vec<Vec<f64>>],
    totals: &[Vec<f64>],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let first = options.threads[0];
    let counts = options.threads.len();
    write!(
        out,
        "medians of {} alternated rounds; speed-up: median (lowest-highest) of each round's \
         time at {first} thread(s) over its time at N\n{:<40} {:>7}",
        options.rounds, "problem", "plies"
    )?;
    for t in &options.threads {
        write!(out, " {:>9}", format!("{t}T (s)"))?;
    }
    if options.pair {
        write!(out, " {:>9}", "pair (s)")?;
    }
    for t in &options.threads[1..] {
        write!(out, " {:>22}", format!("speed-up {t}T"))?;
    }
    if options.pair {
        write!(out, " {:>22} {:>10}", "ceiling", "efficiency")?;
    }
    writeln!(out)?;
    // Values of the rounds, as "median (lowest-highest)".
    let spread = |values: Vec<f64>| {
        let (low, high) = values
            .iter()
            .fold((f64::INFINITY, 0f64), |(l, h), &r| (l.min(r), h.max(r)));
        format!("{:.2} ({low:.2}-{high:.2})", median(&values))
    };
    let ratios = |a: &[f64], b: &[f64], scale: f64| -> Vec<f64> {
        a.iter()
            .zip(b)
            .map(|(x, y)| scale * x / y.max(1e-9))
            .collect()
    };
    let row = |out: &mut dyn Write, name: &str, plies: String, runs: &[Vec<f64>]| {
        write!(out, "{name:<40} {plies:>7}")?;
        for secs in runs {
            write!(out, " {:>9.3}", median(secs))?;
        }
        for secs in &runs[1..counts] {
            write!(out, " {:>22}", spread(ratios(&runs[0], secs, 1.0)))?;
        }

        if options.pair {
            // (`run` checked the counts are 1 and 2.)
            let pair = &runs[counts];
            write!(out, " {:>22}", spread(ratios(&runs[0], pair, 2.0)))?;
            write!(out, " {:>10.2}", median(&ratios(pair, &runs[1], 0.5)))?;
        }
        writeln!(out)
    };
    for (p, runs) in problems.iter().zip(times) {
        row(out, p.name, p.plies.to_string(), runs)?;
    }
    row(out, "total", String::new(), totals)?;
    let flagged: Vec<String> = problems
        .iter()
        .zip(times)
        .filter_map(|(p, runs)| {
            let slower = slower_counts(options, runs);
            let counts: Vec<String> = slower.iter().map(|t| format!("{t}T")).collect();
            (!slower.is_empty()).then(|| format!("{} ({})", p.name, counts.join(", ")))
        })
        .collect();
    if options.threads.len() > 1 {
        writeln!(
            out,
            "slower with more threads (median over {SLOWER_FLAG:.2}x the first count's): {}",
            if flagged.is_empty() {
                "none".to_string()
            } else {
                flagged.join(", ")
            }
        )?;
    }
    Ok(())
}

/// A thread count whose median time is more than this many times the first count's is flagged
/// in the comparison's last line: more threads should never cost time.
const SLOWER_FLAG: f64 = 1.15;

/// The thread counts after the first whose median time over the rounds is more than
/// [`SLOWER_FLAG`] times the first count's (`runs`: one column of times a count, in
/// `options.threads`' order, then perhaps the pair's).
fn slower_counts(options: &BenchOptions, runs: &[Vec<f64>]) -> Vec<usize> {
    let first = median(&runs[0]);
    options
        .threads
        .iter()
        .zip(runs)
        .skip(1)
        .filter(|(_, secs)| median(secs) > SLOWER_FLAG * first)
        .map(|(&t, _)| t)
        .collect()
}

/// Solves `p` on both solvers at once, at one thread each, started together: one on a thread
/// of its own with the search's stack, one on this thread (`run` runs on the search's stack).
fn solve_twice_at_once(
    (a, b): (&mut Solver, &mut Solver),
    p: &BenchProblem,
    options: &BenchOptions,
) -> std::io::Result<(Solved, Solved)> {
    // Everything that can fail comes before the threads meet at the start.
    ready(a, options)?;
    ready(b, options)?;
    let start = std::sync::Barrier::new(2);
    std::thread::scope(|scope| {
        let other = std::thread::Builder::new()
            .name("bench-pair".into())
            .stack_size(crate::search::SEARCH_STACK_BYTES)
            .spawn_scoped(scope, || {
                start.wait();
                solve_ready(a, p, options, 1)
            })?;
        start.wait();
        let here = solve_ready(b, p, options, 1);
        let there = other
            .join()
            .map_err(|_| std::io::Error::other("a solve of the pair panicked"))?;
        Ok((there, here))
    })
}

/// The median (the mean of the middle two of an even count).
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

fn total_line(rows: &[Solved]) -> String {
    let solved = rows.iter().filter(|r| r.right).count();
    let nodes: u64 = rows.iter().map(|r| r.nodes).sum();
    let secs: f64 = rows.iter().map(|r| r.secs).sum();
    format!(
        "total: solved {solved}/{} nodes {nodes} time {secs:.3} s nodes/s {:.0}",
        rows.len(),
        nodes as f64 / secs.max(1e-9)
    )
}

/// A solver for the first problem: the table written now for the short problems, which clear
/// it from one to the next; a placeholder for the long ones, which get a fresh solver each (see
/// `ready`: writing 8 GB first took seconds, for nothing).
fn first_solver(options: &BenchOptions) -> std::io::Result<Solver> {
    let solver = if options.group == Group::Long {
        Solver::new_lazy(1)
    } else {
        Solver::new(options.hash_mb)
    };
    solver.map_err(std::io::Error::other)
}

/// Solves one problem from a clean table, so that times do not depend on the order.
fn solve_one(
    solver: &mut Solver,
    p: &BenchProblem,
    options: &BenchOptions,
    threads: usize,
) -> std::io::Result<Solved> {
    ready(solver, options)?;
    Ok(solve_ready(solver, p, options, threads))
}

/// A clean table for the next problem. The long problems get a fresh solver, as `kyozume
/// solve` does, so that the memory one touched is released before the next and each peak is
/// its own.
fn ready(solver: &mut Solver, options: &BenchOptions) -> std::io::Result<()> {
    if options.group == Group::Long {
        // The old one goes first: two of them need not fit at once.
        *solver = Solver::new_lazy(1).map_err(std::io::Error::other)?;
        *solver = Solver::new_lazy(options.hash_mb).map_err(std::io::Error::other)?;
    } else {
        solver.clear();
    }
    Ok(())
}

/// Solves `p` on a solver made ready for it.
fn solve_ready(
    solver: &mut Solver,
    p: &BenchProblem,
    options: &BenchOptions,
    threads: usize,
) -> Solved {
    let pos = Position::from_sfen(p.sfen).expect("bench SFEN parses");
    peak_memory::reset();
    let limits = Limits {
        time: options.time_limit,
        max_plies: None,
        threads,
        solution_limit: options.solutions,
        ..Default::default()
    };
    let stop = AtomicBool::new(false);
    let r = solver
        .solve(&pos, &limits, &stop, &mut |_| {})
        .expect("bench problems have a defender king");
    let (found, right, wrong) = match &r.outcome {
        Outcome::Mate(line) => {
            let ok = line.len() as u32 == p.plies && verify_helpmate(&pos, line).is_ok();
            let mark = if ok { "" } else { " WRONG" };
            (format!("{}{mark}", line.len()), ok, !ok)
        }
        Outcome::NoMate | Outcome::NoMateWithin { .. } => ("nomate WRONG".to_string(), false, true),
        Outcome::Unknown { .. } => ("-".to_string(), false, false),
    };
    Solved {
        secs: r.elapsed.as_secs_f64(),
        nodes: r.nodes,
        found,
        right,
        wrong,
        peak_mb: peak_memory::megabytes(),
    }
}

/// Generating checks directly against generating every legal move and keeping those that give
/// check, over attacker positions of the suite reached by random helpmate-style playouts.
/// Prints both speeds; the direct generator must be the faster.
pub fn run_checks(out: &mut dyn Write) -> std::io::Result<bool> {
    use crate::shogi::movegen::{self, MoveList};
    let mut positions = Vec::new();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for p in suite().iter().cycle().take(2000) {
        let mut pos = Position::from_sfen(p.sfen).expect("bench SFEN parses");
        for _ in 0..400 {
            positions.push(pos.clone());
            let mut list = MoveList::new();
            movegen::checks(&pos, &mut list);
            if list.is_empty() {
                break;
            }
            pos.do_move(list[(next() % list.len() as u64) as usize]);
            list.clear();
            movegen::evasions(&pos, &mut list);
            if list.is_empty() {
                break;
            }
            pos.do_move(list[(next() % list.len() as u64) as usize]);
        }
    }
    let rounds = 20;
    let (direct, direct_secs) = time_rounds(&positions, rounds, |pos, list| {
        movegen::checks(pos, list);
        list.len()
    });
    let (filtered, filtered_secs) = time_rounds(&positions, rounds, |pos, list| {
        movegen::legal(pos, list);
        let ci = pos.check_info();
        list.iter()
            .filter(|&&m| {
                ci.as_ref()
                    .is_some_and(|ci| movegen::gives_check_with(pos, ci, m))
            })
            .count()
    });
    let calls = (positions.len() * rounds) as f64;
    writeln!(
        out,
        "{} attacker positions x {rounds}: checks generated directly {:.0} ns/position, \
         all legal moves filtered by gives_check {:.0} ns/position ({:.1}x); {} checks each way",
        positions.len(),
        direct_secs / calls * 1e9,
        filtered_secs / calls * 1e9,
        filtered_secs / direct_secs,
        direct / rounds
    )?;
    Ok(direct == filtered && direct_secs < filtered_secs)
}

/// Total checks found by `find` over every position, `rounds` times, and the seconds taken
/// (generic, so that each generator is timed inlined, as the search calls it).
fn time_rounds(
    positions: &[Position],
    rounds: usize,
    mut find: impl FnMut(&Position, &mut MoveList) -> usize,
) -> (usize, f64) {
    let mut list = MoveList::new();
    let start = std::time::Instant::now();
    let mut found = 0usize;
    for _ in 0..rounds {
        for pos in positions {
            list.clear();
            found += find(pos, &mut list);
        }
    }
    (found, start.elapsed().as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::{counts_in_round, median, run, BenchOptions};

    #[test]
    fn no_thread_count_or_no_round_is_an_error_not_a_panic() {
        let options = |threads: Vec<usize>, rounds| BenchOptions {
            group: super::Group::Default,
            hash_mb: 1,
            solutions: 1,
            threads,
            rounds,
            time_limit: None,
            filters: vec!["oneway43".to_string()],
            pair: false,
        };
        let mut out = Vec::new();
        for bad in [options(vec![], 3), options(vec![1, 2], 0)] {
            let error = run(&bad, &mut out).unwrap_err().to_string();
            assert!(error.contains("at least one thread count"), "{error}");
        }
        assert!(out.is_empty(), "nothing solved before the error");
    }

    #[test]
    fn rounds_alternate_the_order_of_the_counts() {
        assert_eq!(counts_in_round(1, 2), [0, 1]);
        assert_eq!(counts_in_round(2, 2), [1, 0]);
        assert_eq!(counts_in_round(3, 3), [0, 1, 2]);
        assert_eq!(counts_in_round(4, 3), [2, 1, 0]);
        assert_eq!(counts_in_round(1, 1), [0]);
        assert_eq!(counts_in_round(2, 1), [0]);
    }

    #[test]
    fn a_count_more_than_15_percent_slower_than_the_first_is_flagged() {
        let options = BenchOptions {
            group: super::Group::Default,
            hash_mb: 1,
            solutions: 1,
            threads: vec![1, 2, 4],
            rounds: 3,
            time_limit: None,
            filters: Vec::new(),
            pair: false,
        };
        let column = |x: f64| vec![x, x * 0.9, x * 1.1];
        let runs = [column(1.0), column(1.14), column(1.16)];
        assert_eq!(super::slower_counts(&options, &runs), [4]);
        let runs = [column(1.0), column(0.5), column(1.0)];
        assert!(super::slower_counts(&options, &runs).is_empty());
        // The pair's column, after the counts', is never judged.
        let options = BenchOptions {
            threads: vec![1, 2],
            pair: true,
            ..options
        };
        let runs = [column(1.0), column(0.6), column(9.0)];
        assert!(super::slower_counts(&options, &runs).is_empty());
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[0.5]), 0.5);
        assert!(median(&[]).is_nan());
    }
}
