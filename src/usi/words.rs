//! The engine's answers as protocol lines: progress, the solution and its count, what was
//! proven.

use super::Output;
use crate::search::{Limits, Outcome, Progress, SearchResult, Solutions, NEVER};
use crate::shogi::Move;

pub(super) fn info_line(p: &Progress) -> String {
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

/// `info string solutions ...` and one `info string alt ...` per further solution. A count that
/// is only a lower bound says so with a `+`: `solutions 2+ (SolutionLimit 2 reached)`.
fn solution_lines(s: &Solutions, limit: usize) -> Vec<String> {
    let verdict = match s.unique() {
        Some(true) => "solutions 1 unique".to_string(),
        _ if s.exact(limit) => format!("solutions {}", s.count),
        _ if s.complete => format!("solutions {}+ (SolutionLimit {limit} reached)", s.count),
        _ => format!("solutions {}+ (counting stopped early)", s.count),
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
pub(super) fn stipulation_words(s: crate::shogi::Stipulation) -> String {
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

/// The answer to a `go mate` searched within `limits`.
pub(super) fn report_result(out: &Output, r: &SearchResult, limits: &Limits) {
    let stipulation = limits.stipulation;
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
                for l in solution_lines(s, limits.solution_limit) {
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
