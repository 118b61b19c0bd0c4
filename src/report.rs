//! One problem's answer as a front end gives it: for people (diagram, verdict, Japanese and USI
//! lines, alternatives from where they diverge) and for scripts (one JSON object a line, the
//! object `kyozume solve --json` prints). Outside any front end, so that each may give it.

use crate::problem::Length;
use crate::search::{Limits, Outcome, Progress, SearchResult, Solver};
use crate::shogi::conditions::CaptureRule;
use crate::shogi::japanese::line_to_japanese_after;
use crate::shogi::kif::to_bod;
use crate::shogi::record::chosen_homes;
use crate::shogi::{Move, Position, Stipulation};
use serde::Serialize;
use std::sync::atomic::AtomicBool;

/// What became of one problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Mate,
    NoMate,
    Unsolved,
    Error,
}

/// A problem's answer against its stated length (`--plies`, a file's `手数＝N` or `N手`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// 完全: exactly one solution of the stated length, none shorter.
    Sound,
    /// 余詰: more than one solution of the stated length (move orders included), none shorter.
    Cooked,
    /// 早詰: a solution shorter than the stated length (the one given).
    Short,
    /// 不詰: no solution within the stated length.
    NoMate,
}

/// Game-record formats a solution is written in (see [`crate::shogi::record`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RecordFormat {
    /// Kakinoki's KIF: numbered moves with their origins, 打 on every drop.
    Kif,
    /// Kakinoki's KI2: moves in Japanese notation.
    Ki2,
    /// CSA V2.2.
    Csa,
}

impl Verdict {
    /// The composers' word for it.
    pub fn japanese(self) -> &'static str {
        match self {
            Verdict::Sound => "完全",
            Verdict::Cooked => "余詰",
            Verdict::Short => "早詰",
            Verdict::NoMate => "不詰",
        }
    }

    /// The JSON word for it.
    pub fn code(self) -> &'static str {
        match self {
            Verdict::Sound => "sound",
            Verdict::Cooked => "cooked",
            Verdict::Short => "short",
            Verdict::NoMate => "nomate",
        }
    }
}

/// Solves `position` under `stipulation` within `limits` (which carry `length`'s bound) and
/// builds its report: how every front end answers a problem. A stated length the stipulation
/// cannot have, and a position it cannot take, are reported as errors.
pub fn answer(
    solver: &mut Solver,
    name: Option<String>,
    (position, stipulation, length): (&Position, Stipulation, Option<Length>),
    limits: &Limits,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&Progress),
) -> Report {
    crate::peak_memory::reset();
    let error = |e: String| {
        let mut r = Report::input_error(name.clone(), &position.to_sfen(), e);
        r.stipulation = stipulation;
        r
    };
    if let Some(e) = Length::error(length, stipulation) {
        return error(e);
    }
    let mut report = match solver.solve(position, limits, stop, progress) {
        Ok(result) => Report::from_result(
            name.clone(),
            (position, stipulation),
            &result,
            limits.solution_limit,
        )
        .with_length(limits.max_plies, matches!(length, Some(Length::Stated(_)))),
        Err(e) => error(e.to_string()),
    };
    report.peak_mb = crate::peak_memory::megabytes();
    report
}

/// One ply of a line as a board shows it.
#[derive(Clone, Debug, Serialize)]
pub struct ShownPly {
    /// The position after the ply.
    pub sfen: String,
    /// The squares of the pieces that check the side to move's king (USI names, `5b`).
    pub checkers: Vec<String>,
}

/// One problem's result, as printed in `--json` mode (one object a line).
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub name: Option<String>,
    /// The position's SFEN (for input errors: the input as given).
    pub sfen: String,
    /// What was solved: `H#`, `HS#`, `H# defender first`, `HS# defender first`, with the
    /// conditions' USI values after it when there are any: `H# (Annan, Greedy)`.
    #[serde(serialize_with = "stipulation_code")]
    pub stipulation: Stipulation,
    pub status: Status,
    /// The bound searched within (`--max-plies`, `--plies`, `MaxPlies`, a file's length); a
    /// `nomate` under it means none within that many plies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_plies: Option<u32>,
    /// The answer against the stated length, when one was stated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    pub plies: Option<usize>,
    /// Distinct shortest lines counted, at most the limit asked for (1 when not counted).
    pub solutions: usize,
    /// Whether `solutions` is the exact count: false when it is only a lower bound (counting
    /// stopped at the limit asked for, or at the time limit; 1 when not counted at all).
    pub complete: bool,
    /// `true` / `false` when counted, `null` otherwise.
    pub unique: Option<bool>,
    pub moves: Vec<String>,
    pub alternatives: Vec<Vec<String>>,
    /// Under キルケ and アンチキルケ (and PWC): for each move, the home chosen by a capture on
    /// file 5 with both homes empty (`"3a"`), else `null`. Absent under other rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rebirths: Option<Vec<Option<String>>>,
    /// The same for each of `alternatives`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alternative_rebirths: Option<Vec<Vec<Option<String>>>>,
    pub japanese: Option<String>,
    pub nodes: u64,
    pub time_ms: u64,
    /// The process's peak resident memory while it solved this problem (MB; `null` where the
    /// system does not tell; with `--jobs`, of every problem being solved at the time).
    pub peak_mb: Option<u64>,
    pub error: Option<String>,
    /// `--probe`: what the engine knows about the position asked about (`probe: ...` lines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe: Option<Vec<String>>,
    /// Lower bound proven when unsolved.
    #[serde(skip)]
    pub lower_bound: Option<u32>,
    #[serde(skip)]
    pub solution_limit: usize,
    #[serde(skip)]
    lines: Vec<Vec<Move>>,
    #[serde(skip)]
    position: Option<Position>,
}

fn stipulation_code<S: serde::Serializer>(s: &Stipulation, out: S) -> Result<S::Ok, S::Error> {
    out.serialize_str(&s.to_string())
}

fn usi_strings(line: &[Move]) -> Vec<String> {
    line.iter().map(|m| m.to_string()).collect()
}

impl Report {
    /// A report with nothing found yet.
    fn blank(name: Option<String>, sfen: String, status: Status) -> Report {
        Report {
            name,
            sfen,
            stipulation: Stipulation::HELPMATE,
            status,
            max_plies: None,
            verdict: None,
            plies: None,
            solutions: 0,
            complete: false,
            unique: None,
            moves: Vec::new(),
            alternatives: Vec::new(),
            rebirths: None,
            alternative_rebirths: None,
            japanese: None,
            nodes: 0,
            time_ms: 0,
            peak_mb: None,
            error: None,
            probe: None,
            lower_bound: None,
            solution_limit: 0,
            lines: Vec::new(),
            position: None,
        }
    }

    pub fn from_result(
        name: Option<String>,
        (position, stipulation): (&Position, Stipulation),
        result: &SearchResult,
        solution_limit: usize,
    ) -> Report {
        let mut report = Report::blank(name, position.to_sfen(), Status::Unsolved);
        report.stipulation = stipulation;
        report.nodes = result.nodes;
        report.time_ms = result.elapsed.as_millis() as u64;
        report.solution_limit = solution_limit;
        report.position = Some(position.clone());
        match &result.outcome {
            Outcome::Mate(line) => {
                report.status = Status::Mate;
                report.plies = Some(line.len());
                report.lines = match &result.solutions {
                    Some(s) if !s.lines.is_empty() => s.lines.clone(),
                    _ => vec![line.clone()],
                };
                report.solutions = result.solutions.as_ref().map_or(1, |s| s.count);
                report.unique = result.solutions.as_ref().and_then(|s| s.unique());
                report.complete = result
                    .solutions
                    .as_ref()
                    .is_some_and(|s| s.unique() == Some(true) || s.exact(solution_limit));
                report.moves = usi_strings(&report.lines[0]);
                report.alternatives = report.lines[1..].iter().map(|l| usi_strings(l)).collect();
                let rules = stipulation.rules();
                if rules.conditions().capture_rule != CaptureRule::Normal {
                    let homes = |line: &[Move]| -> Vec<Option<String>> {
                        chosen_homes(position, line, rules.capture_setting())
                            .into_iter()
                            .map(|home| home.map(|sq| sq.to_string()))
                            .collect()
                    };
                    report.rebirths = Some(homes(&report.lines[0]));
                    report.alternative_rebirths =
                        Some(report.lines[1..].iter().map(|l| homes(l)).collect());
                }
                report.japanese = Some(line_to_japanese_after(
                    position,
                    &report.lines[0],
                    None,
                    stipulation.rules(),
                ));
            }
            Outcome::NoMate => {
                report.status = Status::NoMate;
                report.complete = true;
            }
            Outcome::NoMateWithin { max_plies } => {
                report.status = Status::NoMate;
                report.complete = true;
                report.max_plies = Some(*max_plies);
            }
            Outcome::Unknown { lower_bound } => report.lower_bound = Some(*lower_bound),
        }
        report
    }

    /// Sets the bound searched within and, for a stated length, the verdict against it.
    pub fn with_length(mut self, max_plies: Option<u32>, stated: bool) -> Report {
        if self.status == Status::Error {
            return self;
        }
        self.max_plies = max_plies;
        self.verdict = match (max_plies, stated) {
            (Some(n), true) => self.verdict_at(n),
            _ => None,
        };
        self
    }

    /// The verdict against a stated length of `n` plies (None while it is not known: not
    /// solved, or the count cut short).
    fn verdict_at(&self, n: u32) -> Option<Verdict> {
        match self.status {
            Status::NoMate => Some(Verdict::NoMate),
            Status::Mate => match self.plies.map(|p| p as u32) {
                Some(p) if p < n => Some(Verdict::Short),
                _ => match self.unique {
                    Some(true) => Some(Verdict::Sound),
                    Some(false) => Some(Verdict::Cooked),
                    None => None,
                },
            },
            Status::Unsolved | Status::Error => None,
        }
    }

    pub fn input_error(name: Option<String>, input: &str, error: String) -> Report {
        let mut report = Report::blank(name, input.trim().to_string(), Status::Error);
        report.error = Some(error);
        report
    }

    /// Each line found (the solution given, then the alternatives), played under the problem's
    /// rules: the board after each of its plies (a reborn or returned piece where the rules put
    /// it) and the pieces that check. Empty without a solution.
    pub fn line_plies(&self) -> Vec<Vec<ShownPly>> {
        let Some(root) = &self.position else {
            return Vec::new();
        };
        let rules = self.stipulation.rules();
        let mut root = root.clone();
        rules.adopt(&mut root);
        self.lines
            .iter()
            .map(|line| {
                let mut pos = root.clone();
                line.iter()
                    .map(|&m| {
                        pos.do_move(m);
                        ShownPly {
                            sfen: pos.to_sfen(),
                            checkers: rules
                                .checkers(&pos)
                                .into_iter()
                                .map(|sq| sq.to_string())
                                .collect(),
                        }
                    })
                    .collect()
            })
            .collect()
    }

    /// Each line found in Japanese notation (the solution given first).
    pub fn line_japanese(&self) -> Vec<String> {
        let Some(root) = &self.position else {
            return Vec::new();
        };
        let rules = self.stipulation.rules();
        self.lines
            .iter()
            .map(|line| line_to_japanese_after(root, line, None, rules))
            .collect()
    }

    /// The position solved (none for an input error).
    pub fn position(&self) -> Option<&Position> {
        self.position.as_ref()
    }

    /// The solution given (the first shortest line) as a game record, when a mate was found.
    pub fn record(&self, format: RecordFormat) -> Option<String> {
        use crate::shogi::record;
        let (line, root) = self.first_line().zip(self.position())?;
        let started = chrono::Local::now().format("%Y/%m/%d %H:%M:%S").to_string();
        Some(match format {
            RecordFormat::Kif => record::to_kif(root, self.stipulation, line, &started),
            RecordFormat::Ki2 => record::to_ki2(root, self.stipulation, line, &started),
            RecordFormat::Csa => record::to_csa(root, self.stipulation, line),
        })
    }

    /// The solution given (the first shortest line), when a mate was found.
    pub fn first_line(&self) -> Option<&[Move]> {
        match self.status {
            Status::Mate => self.lines.first().map(Vec::as_slice),
            _ => None,
        }
    }

    pub fn json(&self) -> String {
        serde_json::to_string(self).expect("a report serialises")
    }

    /// One line for batch listings.
    pub fn summary_line(&self) -> String {
        let name = self.name.as_deref().unwrap_or("-");
        match self.status {
            Status::Mate => format!(
                "{name}\tmate\t{}\t{}{}\t{}\t{:.3}s",
                self.plies.unwrap_or(0),
                self.solution_words(),
                self.verdict
                    .map_or(String::new(), |v| format!(" ({})", v.code())),
                self.moves.join(" "),
                self.time_ms as f64 / 1000.0
            ),
            Status::NoMate => format!(
                "{name}\tnomate\t-\t{}\t-\t{:.3}s",
                match self.max_plies {
                    Some(n) => format!("none within {n} plies"),
                    None => "no helpmate".to_string(),
                },
                self.time_ms as f64 / 1000.0
            ),
            Status::Unsolved => format!(
                "{name}\tunsolved\t-\tnone shorter than {} plies\t-\t{:.3}s",
                self.lower_bound.unwrap_or(1),
                self.time_ms as f64 / 1000.0
            ),
            Status::Error => format!(
                "{name}\terror\t-\t{}\t-\t-",
                self.error.as_deref().unwrap_or("")
            ),
        }
    }

    /// What a solution is called: `helpmate` for H#, else the stipulation's names.
    fn solution_noun(&self) -> String {
        if self.stipulation == Stipulation::HELPMATE {
            "helpmate".to_string()
        } else {
            format!(
                "solution of {} ({})",
                self.stipulation.japanese(),
                self.stipulation.code()
            )
        }
    }

    fn solution_words(&self) -> String {
        match self.unique {
            Some(true) => "unique".to_string(),
            Some(false) if self.solutions >= self.solution_limit => {
                format!("at least {} solutions", self.solutions)
            }
            Some(false) => format!("{} solutions", self.solutions),
            None if self.solution_limit <= 1 => "uniqueness not checked".to_string(),
            None => format!("{}+ solutions (counting stopped early)", self.solutions),
        }
    }

    /// The verdict against the stated length, as a line (empty when none was stated).
    fn verdict_words(&self) -> String {
        let (Some(verdict), Some(n)) = (self.verdict, self.max_plies) else {
            return String::new();
        };
        let why = match verdict {
            Verdict::Sound => format!("the only solution of {n} plies, none shorter"),
            Verdict::Cooked => format!("{} of {n} plies", self.solution_words()),
            Verdict::Short => format!(
                "a solution of {} plies, shorter than the stated {n}",
                self.plies.unwrap_or(0)
            ),
            Verdict::NoMate => format!("no solution within {n} plies"),
        };
        format!(
            "Stated length {n} plies: {} ({}): {why}.\n",
            verdict.japanese(),
            verdict.code()
        )
    }

    /// The full report for people.
    pub fn human(&self) -> String {
        let mut s = String::new();
        if let Some(n) = &self.name {
            s.push_str(&format!("== {n}\n"));
        }
        if let Some(pos) = &self.position {
            s.push_str(&to_bod(pos));
            s.push_str(&format!("sfen {}\n\n", self.sfen));
        }
        match self.status {
            Status::Error => {
                s.push_str(&format!(
                    "Error: {}\n",
                    self.error.as_deref().unwrap_or("bad input")
                ));
                return s;
            }
            Status::NoMate => match self.max_plies {
                Some(n) => {
                    s.push_str(&format!(
                        "No {} within {n} plies (proven; longer ones were not searched).\n",
                        self.solution_noun()
                    ));
                    s.push_str(&self.verdict_words());
                }
                None => s.push_str(&format!(
                    "No {} at any length (proven).\n",
                    self.solution_noun()
                )),
            },
            Status::Unsolved => s.push_str(&format!(
                "Not solved within the limit: no {} is shorter than {} plies.\n",
                self.solution_noun(),
                self.lower_bound.unwrap_or(1)
            )),
            Status::Mate => {
                let pos = self
                    .position
                    .as_ref()
                    .expect("mate reports keep the position");
                let plies = self.plies.unwrap_or(0);
                let verdict = match self.unique {
                    Some(false) => format!("{} — not unique (余詰)", self.solution_words()),
                    _ => self.solution_words(),
                };
                s.push_str(&format!(
                    "Shortest {}: {plies} {}, {verdict}.\n",
                    self.solution_noun(),
                    if plies == 1 { "ply" } else { "plies" }
                ));
                s.push_str(&self.verdict_words());
                s.push('\n');
                s.push_str(&format!(
                    "Solution:\n  {}\n",
                    self.japanese.as_deref().unwrap_or("")
                ));
                s.push_str(&format!("  usi: {}\n", self.moves.join(" ")));
                for (i, alt) in self.lines.iter().enumerate().skip(1) {
                    let first = &self.lines[0];
                    let diverge = first
                        .iter()
                        .zip(alt.iter())
                        .take_while(|(a, b)| a == b)
                        .count();
                    let mut at = pos.clone();
                    for &m in &alt[..diverge] {
                        at.do_move(m);
                    }
                    let previous = diverge.checked_sub(1).map(|i| alt[i].to());
                    let japanese = line_to_japanese_after(
                        &at,
                        &alt[diverge..],
                        previous,
                        self.stipulation.rules(),
                    );
                    s.push_str(&format!(
                        "\nAlternative {}, from ply {}:\n  {}\n  usi: {}\n",
                        i + 1,
                        diverge + 1,
                        japanese,
                        usi_strings(&alt[diverge..]).join(" ")
                    ));
                }
            }
        }
        s.push_str(&format!(
            "\n{} nodes, {:.3} s{}\n",
            self.nodes,
            self.time_ms as f64 / 1000.0,
            self.peak_mb
                .map_or(String::new(), |mb| format!(", {mb} MB peak memory"))
        ));
        if let Some(lines) = &self.probe {
            s.push('\n');
            for l in lines {
                s.push_str(l);
                s.push('\n');
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON's verdict is the word the reports print.
    #[test]
    fn a_verdict_is_one_word_in_json_and_text() {
        for v in [
            Verdict::Sound,
            Verdict::Cooked,
            Verdict::Short,
            Verdict::NoMate,
        ] {
            assert_eq!(
                serde_json::to_string(&v).unwrap(),
                format!("\"{}\"", v.code())
            );
        }
    }
}
