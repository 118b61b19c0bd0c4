//! What a problem asks for: which side's move must end it, and who moves first.
//!
//! * **H#** (ばか詰, 協力詰): every attacker move gives check; the defender plays any legal
//!   move; the line ends when an attacker move checkmates the defender's king.
//! * **HS#** (協力自玉詰, ばか自殺詰): every attacker move gives check; the defender plays any
//!   legal move; the line ends when a *defender* move checkmates the attacker's king. A line in
//!   which the side to move has no move allowed before that is a dead end (the attacker mating
//!   the defender among them).
//! * **受先** (defender first), for either: the side to move at the root is the defender.
//!
//! The lengths follow: H# odd, H# 受先 even, HS# even, HS# 受先 odd. The attacker is the side
//! that checks; it is the side to move at the root unless the defender moves first.
//!
//! A stipulation also carries the fairy conditions it is played under (安南協力詰: the
//! conditions' names come first, as composers print them), so that whatever names, stores or
//! reports a problem's stipulation names its rules too.

use super::conditions::{Conditions, ConditionsError};
use super::movegen::MoveList;
use super::rules::RuleSet;
use super::{Color, Move, Position};
use std::fmt;

/// Whose king the line ends by mating.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Goal {
    /// H#: the attacker mates the defender.
    #[default]
    Helpmate,
    /// HS#: the defender mates the attacker.
    Selfmate,
}

/// A problem's stipulation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Stipulation {
    pub goal: Goal,
    /// 受先: the side to move at the root is the defender.
    pub defender_first: bool,
    /// The fairy conditions (none: normal shogi).
    pub conditions: Conditions,
}

impl Stipulation {
    /// Plain ばか詰, the default.
    pub const HELPMATE: Stipulation = Stipulation {
        goal: Goal::Helpmate,
        defender_first: false,
        conditions: Conditions::NONE,
    };

    /// This stipulation's goal and who moves first, under `conditions`.
    pub fn under(self, conditions: Conditions) -> Stipulation {
        Stipulation { conditions, ..self }
    }

    /// The rules moves follow.
    pub fn rules(self) -> RuleSet {
        RuleSet::new(self.conditions)
    }

    /// Whether the side that makes the last move of a solution is the attacker.
    pub fn attacker_mates(self) -> bool {
        self.goal == Goal::Helpmate
    }

    /// The attacker of a problem whose root has `side_to_move` to move.
    pub fn attacker(self, side_to_move: Color) -> Color {
        if self.defender_first {
            !side_to_move
        } else {
            side_to_move
        }
    }

    /// The parity of every solution's length (1: odd).
    pub fn length_parity(self) -> u32 {
        u32::from(self.attacker_mates() != self.defender_first)
    }

    /// The shortest length a solution can have.
    pub fn shortest_length(self) -> u32 {
        if self.length_parity() == 1 {
            1
        } else {
            2
        }
    }

    /// The least length of this parity that is at least `n` (`u32::MAX`, the search's "no
    /// length at all", stays itself).
    pub fn length_at_least(self, n: u32) -> u32 {
        let n = n.max(self.shortest_length());
        if n % 2 == self.length_parity() {
            n
        } else {
            n.saturating_add(1)
        }
    }

    /// The greatest length of this parity that is at most `n` (the shortest one if none is).
    pub fn length_at_most(self, n: u32) -> u32 {
        if n % 2 == self.length_parity() {
            n.max(self.shortest_length())
        } else {
            n.saturating_sub(1).max(self.shortest_length())
        }
    }

    /// Why this stipulation cannot be solved from `root`, if it cannot: the kings it needs,
    /// or a position its conditions do not allow (a piece where it could never move, the side
    /// not to move in check: both depend on the piece powers).
    pub fn check_position(self, root: &Position) -> Result<(), StipulationError> {
        let attacker = self.attacker(root.side_to_move());
        if root.king(!attacker).is_none() {
            return Err(StipulationError::NoDefenderKing);
        }
        if self.goal == Goal::Selfmate && root.king(attacker).is_none() {
            return Err(StipulationError::NoAttackerKing);
        }
        // (The position may have been read under other rules: a pawn on the last rank is legal
        // under 安南 and not under normal rules.)
        root.validate_under(self.rules())
            .map_err(|e| StipulationError::Position(e.to_string()))?;
        Ok(())
    }

    /// The moves the side to move may play in `pos` (`attacker`: whether it is the attacker):
    /// the attacker's checks, or any legal move of the defender, under the conditions.
    pub fn moves(self, pos: &Position, attacker: bool, list: &mut MoveList) {
        if attacker {
            self.rules().checks(pos, list);
        } else {
            self.rules().legal(pos, list);
        }
    }

    /// The short English name: `H#`, `HS#`, with ` (defender first)` for 受先.
    pub fn code(self) -> &'static str {
        match (self.goal, self.defender_first) {
            (Goal::Helpmate, false) => "H#",
            (Goal::Helpmate, true) => "H# defender first",
            (Goal::Selfmate, false) => "HS#",
            (Goal::Selfmate, true) => "HS# defender first",
        }
    }

    /// The name composers write: 協力詰, 受先協力詰, 協力自玉詰, 受先協力自玉詰, the conditions
    /// first (安南協力詰, 受先対面打歩詰可協力自玉詰).
    pub fn japanese(self) -> String {
        let (first, rest) = self.japanese_parts();
        format!("{first}{}{rest}", self.conditions.japanese())
    }

    /// 受先 (or nothing), and the goal's name.
    fn japanese_parts(self) -> (&'static str, &'static str) {
        let first = if self.defender_first { "受先" } else { "" };
        let goal = match self.goal {
            Goal::Helpmate => "協力詰",
            Goal::Selfmate => "協力自玉詰",
        };
        (first, goal)
    }

    /// The goal's name without the conditions: 協力詰, 受先協力詰, 協力自玉詰, 受先協力自玉詰.
    pub fn japanese_goal(self) -> &'static str {
        match (self.goal, self.defender_first) {
            (Goal::Helpmate, false) => "協力詰",
            (Goal::Helpmate, true) => "受先協力詰",
            (Goal::Selfmate, false) => "協力自玉詰",
            (Goal::Selfmate, true) => "受先協力自玉詰",
        }
    }

    /// Reads a stipulation as composers and programs write it: `H#`, `HS#` (any case, `h`,
    /// `hs`, `helpmate`, `helpselfmate`), or the Japanese names (`ばか詰`, `協力詰`, `協力自玉詰`,
    /// `ばか自殺詰`, `偶数手ばか詰` (= 受先ばか詰), each with `受先` before it for the defender
    /// moving first), with or without a length after it (`協力自玉詰 8手`). Returns the
    /// stipulation and what was left after the name (a length, conditions), trimmed.
    pub fn parse_prefix(text: &str) -> Option<(Stipulation, &str)> {
        let (first, conditions, t) = Stipulation::split_conditions(text).ok()?;
        let (goal, rest) = Stipulation::parse_goal(first, t)?;
        Some((goal.under(conditions), rest))
    }

    /// 受先 and the conditions before a goal's name (in either order), and the text after them.
    fn split_conditions(text: &str) -> Result<(bool, Conditions, &str), ConditionsError> {
        let t = text.trim_start();
        let (first, t) = match t.strip_prefix("受先") {
            Some(rest) => (true, rest.trim_start()),
            None => (false, t),
        };
        let (conditions, t) = Conditions::parse_prefix(t)?;
        Ok(match t.strip_prefix("受先") {
            Some(rest) => (true, conditions, rest.trim_start()),
            None => (first, conditions, t),
        })
    }

    fn parse_goal(defender_first: bool, t: &str) -> Option<(Stipulation, &str)> {
        // Longest names first: 協力自玉詰 before 協力詰's prefix, HS# before H#.
        const NAMES: [(&str, Goal, bool); 12] = [
            ("偶数手ばか詰", Goal::Helpmate, true),
            ("協力自玉詰", Goal::Selfmate, false),
            ("ばか自殺詰", Goal::Selfmate, false),
            ("協力詰め", Goal::Helpmate, false),
            ("ばか詰め", Goal::Helpmate, false),
            ("協力詰", Goal::Helpmate, false),
            ("ばか詰", Goal::Helpmate, false),
            ("helpselfmate", Goal::Selfmate, false),
            ("helpmate", Goal::Helpmate, false),
            ("hs#", Goal::Selfmate, false),
            ("h#", Goal::Helpmate, false),
            ("hs", Goal::Selfmate, false),
        ];
        let lower = t.to_ascii_lowercase();
        for (name, goal, even) in NAMES {
            if lower.starts_with(name) {
                let rest = &t[name.len()..];
                // An English name must end at a word boundary (`hs` is not `hsx`).
                if name.is_ascii() && rest.starts_with(|c: char| c.is_ascii_alphanumeric()) {
                    continue;
                }
                return Some((
                    Stipulation {
                        goal,
                        defender_first: defender_first || even,
                        conditions: Conditions::NONE,
                    },
                    rest.trim(),
                ));
            }
        }
        if lower == "h" || lower.starts_with("h ") {
            return Some((
                Stipulation {
                    goal: Goal::Helpmate,
                    defender_first,
                    conditions: Conditions::NONE,
                },
                t[1..].trim(),
            ));
        }
        None
    }

    /// Reads the rules a user gives on the command line: a stipulation's whole text, or
    /// conditions alone (`安南`, `Annan, Greedy`, `受先安南`), which keep H#.
    pub fn parse_rules(text: &str) -> Result<Stipulation, StipulationError> {
        let (first, conditions, rest) =
            Stipulation::split_conditions(text).map_err(StipulationError::Conditions)?;
        if rest.is_empty() && (first || !conditions.is_none()) {
            return Ok(Stipulation {
                defender_first: first,
                ..Stipulation::HELPMATE
            }
            .under(conditions));
        }
        Stipulation::parse(text)
    }

    /// Reads the rules with the length composers print after them (`協力自玉詰 9手`,
    /// `安南ばか詰13手`, `HS# 10`), or without one (see [`Stipulation::parse_rules`]).
    pub fn parse_stated(text: &str) -> Result<(Stipulation, Option<u32>), StipulationError> {
        if let Some((stipulation, rest)) = Stipulation::parse_prefix(text) {
            if !rest.is_empty() {
                if let Some(plies) = parse_length(rest) {
                    return Ok((stipulation, Some(plies)));
                }
            }
        }
        Stipulation::parse_rules(text).map(|s| (s, None))
    }

    /// Whether a solution can have `plies` plies: the parity of the stipulation's lengths
    /// (see [`Stipulation::length_parity`]), and at least the shortest.
    pub fn fits_length(self, plies: u32) -> bool {
        plies % 2 == self.length_parity() && plies >= self.shortest_length()
    }

    /// Why a stated length of `plies` cannot be this stipulation's, if it cannot.
    pub fn length_error(self, plies: u32) -> Option<String> {
        if self.fits_length(plies) {
            return None;
        }
        let parity = if self.length_parity() == 1 {
            "an odd"
        } else {
            "an even"
        };
        Some(format!(
            "a length of {plies} plies cannot be {} ({}): its solutions have {parity} number of plies",
            self.japanese(),
            self.code()
        ))
    }

    /// Reads a stipulation's whole text (see [`Stipulation::parse_prefix`]); an error names
    /// what was not understood.
    pub fn parse(text: &str) -> Result<Stipulation, StipulationError> {
        Stipulation::split_conditions(text).map_err(StipulationError::Conditions)?;
        match Stipulation::parse_prefix(text) {
            Some((s, "")) => Ok(s),
            Some((_, rest)) => Err(StipulationError::Unknown(rest.to_string())),
            None => Err(StipulationError::Unknown(text.trim().to_string())),
        }
    }
}

impl fmt::Display for Stipulation {
    /// The code, with the conditions' USI values after it: `H#`, `HS# (Annan, Greedy)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())?;
        if !self.conditions.is_none() {
            write!(f, " ({})", self.conditions)?;
        }
        Ok(())
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StipulationError {
    #[error("the defender has no king to mate")]
    NoDefenderKing,
    #[error("HS# needs the attacker's king on the board (the defender mates it)")]
    NoAttackerKing,
    #[error(
        "unknown stipulation '{0}' (expected H#, HS#, or 協力詰, ばか詰, 協力自玉詰, ばか自殺詰, \
         偶数手ばか詰, with 受先 for the defender moving first)"
    )]
    Unknown(String),
    #[error("{0}")]
    Conditions(ConditionsError),
    #[error("the position is not legal under these rules: {0}")]
    Position(String),
}

/// Replays `line` from `root` under `stipulation` and checks that it is a solution: every move
/// legal, every attacker move a check, the last move by the side that must mate, and the
/// position after it checkmate. Returns the first problem found.
pub fn verify_solution(
    root: &Position,
    stipulation: Stipulation,
    line: &[Move],
) -> Result<(), String> {
    if line.is_empty() || line.len() as u32 % 2 != stipulation.length_parity() {
        return Err(format!(
            "a {} solution has {} plies, got {}",
            stipulation.code(),
            if stipulation.length_parity() == 1 {
                "an odd number of"
            } else {
                "an even number of"
            },
            line.len()
        ));
    }
    let attacker = stipulation.attacker(root.side_to_move());
    let rules = stipulation.rules();
    let mut pos = root.clone();
    rules.adopt(&mut pos);
    let mut allowed = MoveList::new();
    for (i, &m) in line.iter().enumerate() {
        if !rules.is_legal_move(&pos, m) {
            return Err(format!("ply {}: {m} is not legal", i + 1));
        }
        let attacks = pos.side_to_move() == attacker;
        if attacks && !rules.gives_check(&pos, m) {
            return Err(format!(
                "ply {}: attacker move {m} does not give check",
                i + 1
            ));
        }
        allowed.clear();
        stipulation.moves(&pos, attacks, &mut allowed);
        if !allowed.contains(m) {
            return Err(format!(
                "ply {}: {m} is not allowed by the captures rule ({})",
                i + 1,
                stipulation.conditions
            ));
        }
        pos.do_move(m);
        if i + 1 < line.len() && rules.is_checkmate(&pos) {
            return Err(format!(
                "ply {}: the line is over (checkmate) before it ends",
                i + 1
            ));
        }
    }
    let mated = pos.side_to_move();
    let wanted = if stipulation.attacker_mates() {
        !attacker
    } else {
        attacker
    };
    if mated != wanted {
        return Err("the last move is not the mating side's".to_string());
    }
    if rules.is_checkmate(&pos) {
        Ok(())
    } else {
        Err("the final position is not checkmate".to_string())
    }
}

/// A length as composers write it: `9手`, `１３手` (full-width digits), `十三手` (kanji), or a
/// bare number; `手` may be left out. None for anything else, zero and lengths past `u32`.
pub fn parse_length(text: &str) -> Option<u32> {
    let t = text.trim();
    let t = t.strip_suffix('手').unwrap_or(t).trim_end();
    if t.is_empty() {
        return None;
    }
    let digit = |c: char| match c {
        '0'..='9' => Some(c as u32 - '0' as u32),
        '０'..='９' => Some(c as u32 - '０' as u32),
        _ => None,
    };
    let plies = if t.chars().all(|c| digit(c).is_some()) {
        t.chars()
            .try_fold(0u32, |n, c| n.checked_mul(10)?.checked_add(digit(c)?))
    } else {
        kanji_number(t)
    }?;
    (plies > 0).then_some(plies)
}

/// A number in kanji as lengths are written: 十三, 二十七, 百五十一, 三千二百, 一〇一.
fn kanji_number(text: &str) -> Option<u32> {
    let value = |c: char| {
        "〇一二三四五六七八九"
            .chars()
            .position(|d| d == c)
            .map(|v| v as u32)
    };
    let unit = |c: char| match c {
        '十' => Some(10),
        '百' => Some(100),
        '千' => Some(1000),
        '万' => Some(10_000),
        _ => None,
    };
    // Digits written place by place (一〇一) have no units.
    if text.chars().all(|c| value(c).is_some()) {
        return text
            .chars()
            .try_fold(0u32, |n, c| n.checked_mul(10)?.checked_add(value(c)?));
    }
    let (mut total, mut below_man, mut digit) = (0u32, 0u32, None::<u32>);
    for c in text.chars() {
        if let Some(v) = value(c) {
            if digit.is_some() {
                return None;
            }
            digit = Some(v);
        } else if let Some(u) = unit(c) {
            if u == 10_000 {
                total = (below_man + digit.take().unwrap_or(0)).checked_mul(u)?;
                below_man = 0;
            } else {
                below_man += digit.take().unwrap_or(1) * u;
            }
        } else {
            return None;
        }
    }
    total.checked_add(below_man + digit.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_as_composers_write_them() {
        let h = Stipulation::HELPMATE;
        let hs = Stipulation {
            goal: Goal::Selfmate,
            defender_first: false,
            conditions: Conditions::NONE,
        };
        let first = |s: Stipulation| Stipulation {
            defender_first: true,
            ..s
        };
        for (text, want) in [
            ("H#", h),
            ("h#", h),
            ("helpmate", h),
            ("ばか詰", h),
            ("協力詰", h),
            ("HS#", hs),
            ("hs", hs),
            ("協力自玉詰", hs),
            ("ばか自殺詰", hs),
            ("受先ばか詰", first(h)),
            ("偶数手ばか詰", first(h)),
            ("受先協力自玉詰", first(hs)),
        ] {
            assert_eq!(Stipulation::parse(text), Ok(want), "{text}");
        }
        assert_eq!(
            Stipulation::parse_prefix("協力自玉詰 8手"),
            Some((hs, "8手"))
        );
        let annan_hs = hs.under(Conditions {
            piece_moves: crate::shogi::conditions::PieceMoves::Annan,
            ..Conditions::NONE
        });
        assert_eq!(Stipulation::parse("安南協力自玉詰"), Ok(annan_hs));
        assert_eq!(
            Stipulation::parse("受先安南協力自玉詰"),
            Ok(first(annan_hs))
        );
        assert_eq!(
            Stipulation::parse("安南受先協力自玉詰"),
            Ok(first(annan_hs))
        );
        assert_eq!(Stipulation::parse_rules("Annan HS#"), Ok(annan_hs));
        assert_eq!(
            Stipulation::parse_rules("安南").map(|s| s.goal),
            Ok(Goal::Helpmate)
        );
        assert_eq!(annan_hs.japanese(), "安南協力自玉詰");
        assert!(matches!(
            Stipulation::parse("安南対面ばか詰"),
            Err(StipulationError::Conditions(_))
        ));
        assert!(Stipulation::parse("詰将棋").is_err());
        assert!(Stipulation::parse("HSX").is_err());
        assert!(Stipulation::parse("HS# extra").is_err());
    }

    #[test]
    fn lengths_have_the_stipulations_parity() {
        let all = [
            (Goal::Helpmate, false, 1),
            (Goal::Helpmate, true, 0),
            (Goal::Selfmate, false, 0),
            (Goal::Selfmate, true, 1),
        ];
        for (goal, defender_first, parity) in all {
            let s = Stipulation {
                goal,
                defender_first,
                conditions: Conditions::NONE,
            };
            assert_eq!(s.length_parity(), parity, "{s}");
            assert_eq!(s.length_at_least(u32::MAX), u32::MAX, "{s}");
            for n in 0..10 {
                let up = s.length_at_least(n);
                assert!(up >= n && up % 2 == parity && up >= s.shortest_length());
                let down = s.length_at_most(n.max(s.shortest_length()));
                assert!(down <= n.max(s.shortest_length()) && down % 2 == parity);
            }
        }
    }

    #[test]
    fn a_line_of_the_wrong_parity_or_side_is_refused() {
        let root = Position::from_sfen("4k4/9/4P4/9/9/9/9/9/4K4 b G 1").unwrap();
        let mate = root.parse_move("G*5b").unwrap();
        assert_eq!(
            verify_solution(&root, Stipulation::HELPMATE, &[mate]),
            Ok(())
        );
        let hs = Stipulation {
            goal: Goal::Selfmate,
            defender_first: false,
            conditions: Conditions::NONE,
        };
        assert!(
            verify_solution(&root, hs, &[mate]).is_err(),
            "odd length for HS#"
        );
        assert!(verify_solution(&root, hs, &[]).is_err());
        // Defender first: Black to move is the defender, so its G*5b mates the attacker's king,
        // a 1-ply HS# 受先, and no H# 受先 (whose lengths are even).
        let hs_first = Stipulation {
            goal: Goal::Selfmate,
            defender_first: true,
            conditions: Conditions::NONE,
        };
        assert_eq!(verify_solution(&root, hs_first, &[mate]), Ok(()));
        let h_first = Stipulation {
            goal: Goal::Helpmate,
            defender_first: true,
            conditions: Conditions::NONE,
        };
        assert!(verify_solution(&root, h_first, &[mate]).is_err());
    }

    #[test]
    fn reads_lengths_as_composers_write_them() {
        for (text, plies) in [
            ("9手", Some(9)),
            (" 13 ", Some(13)),
            ("１３手", Some(13)),
            ("十三手", Some(13)),
            ("二十七手", Some(27)),
            ("百五十一手", Some(151)),
            ("三千二百手", Some(3200)),
            ("一万九千四百四十七手", Some(19447)),
            ("一〇一手", Some(101)),
            ("0手", None),
            ("手", None),
            ("九九手九", None),
            ("99999999999", None),
            ("abc", None),
        ] {
            assert_eq!(parse_length(text), plies, "{text}");
        }
        let (s, n) = Stipulation::parse_stated("協力自玉詰 9手").unwrap();
        assert_eq!((s.goal, n), (Goal::Selfmate, Some(9)));
        let (s, n) = Stipulation::parse_stated("安南ばか詰13手").unwrap();
        assert_eq!((s.japanese().as_str(), n), ("安南協力詰", Some(13)));
        assert_eq!(Stipulation::parse_stated("禁欲").unwrap().1, None);
        assert!(Stipulation::parse_stated("協力自玉詰 九手目").is_err());
        assert!(Stipulation::HELPMATE.fits_length(9));
        assert!(!Stipulation::HELPMATE.fits_length(8));
        let hs = Stipulation::parse("協力自玉詰").unwrap();
        assert!(hs.fits_length(10) && !hs.fits_length(9) && !hs.fits_length(0));
        assert!(hs.length_error(9).unwrap().contains("even"));
        let first = Stipulation::parse("受先ばか詰").unwrap();
        assert!(first.fits_length(8) && first.length_error(8).is_none());
    }
}
