//! A probe report in words, the same for every front end.

use super::{ProbeLine, ProbeReport, Role, TableEntry};
use crate::shogi::{Position, Stipulation};

impl ProbeReport {
    /// The report on `pos` as text lines, each starting `probe: ` (USI puts them in `info
    /// string`, the command line prints them as they are).
    pub fn lines(&self, pos: &Position, stipulation: Stipulation) -> Vec<String> {
        let report = self;
        // What a solution is called: "helpmate" under plain ばか詰, else "HS# solution", ...
        let noun = if stipulation == Stipulation::HELPMATE {
            "helpmate".to_string()
        } else {
            format!("{} solution", stipulation.code())
        };
        let role = match report.role {
            Role::Attacker => "attacker to move",
            Role::Defender => "defender to move, in check",
            Role::Outside => "defender to move, not in check",
        };
        let mut lines = vec![format!("probe: sfen {} ({role})", pos.to_sfen())];
        let entry = |e: TableEntry| {
            match e {
        TableEntry::Unknown => "unknown".to_string(),
        TableEntry::NoMateAtAll => format!("no {noun} at any length"),
        TableEntry::NoMateShorterThan {
            plies,
            conditional: false,
        } => format!("no {noun} shorter than {plies} plies"),
        TableEntry::NoMateShorterThan {
            plies,
            conditional: true,
        } => format!(
            "no {noun} shorter than {plies} plies, conditional on a repetition in the last iteration"
        ),
    }
        };
        lines.push(format!("probe: table: {}", entry(report.entry)));
        if let Some(m) = report.single {
            lines.push(format!("probe: single live move {m}"));
        }
        if report.role != Role::Outside {
            let what = if report.role == Role::Attacker {
                "checks"
            } else {
                "evasions"
            };
            let dead = report
                .children
                .iter()
                .filter(|c| c.entry == TableEntry::NoMateAtAll)
                .count();
            let live: Vec<String> = report
                .children
                .iter()
                .filter(|c| c.entry != TableEntry::NoMateAtAll)
                .map(|c| match c.entry {
                    TableEntry::NoMateShorterThan { plies, .. } => format!("{}>={plies}", c.mv),
                    _ => format!("{}?", c.mv),
                })
                .collect();
            lines.push(format!(
                "probe: {} {what}, {dead} dead; live (bound in plies, ? unknown): {}",
                report.children.len(),
                if live.is_empty() {
                    "none".to_string()
                } else {
                    live.join(" ")
                }
            ));
        }
        lines.push(match &report.line {
            ProbeLine::Mate(line) if line.is_empty() => "probe: checkmate".to_string(),
            ProbeLine::Mate(line) => format!(
                "probe: shortest {noun} {} plies: {}",
                line.len(),
                line.iter()
                    .map(|m| m.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            ProbeLine::NoMate if report.role == Role::Outside => {
                "probe: not a helpmate position (the defender is to move and not in check)"
                    .to_string()
            }
            ProbeLine::NoMate => format!("probe: no {noun} at any length"),
            ProbeLine::Unknown { lower_bound } => format!(
            "probe: no {noun} shorter than {lower_bound} plies; the search ended before an answer"
        ),
        });
        lines
    }
}
