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

use super::movegen::{self, MoveList};
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
}

impl Stipulation {
    /// Plain ばか詰, the default.
    pub const HELPMATE: Stipulation = Stipulation {
        goal: Goal::Helpmate,
        defender_first: false,
    };

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

    /// Why this stipulation cannot be solved from `root`, if it cannot: the kings it needs.
    pub fn check_position(self, root: &Position) -> Result<(), StipulationError> {
        let attacker = self.attacker(root.side_to_move());
        if root.king(!attacker).is_none() {
            return Err(StipulationError::NoDefenderKing);
        }
        if self.goal == Goal::Selfmate && root.king(attacker).is_none() {
            return Err(StipulationError::NoAttackerKing);
        }
        Ok(())
    }

    /// The moves the side to move may play in `pos` (`attacker`: whether it is the attacker):
    /// the attacker's checks, or any legal move of the defender.
    pub fn moves(self, pos: &Position, attacker: bool, list: &mut MoveList) {
        if attacker {
            movegen::checks(pos, list);
        } else {
            movegen::legal(pos, list);
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

    /// The name composers write: 協力詰, 受先協力詰, 協力自玉詰, 受先協力自玉詰.
    pub fn japanese(self) -> &'static str {
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
        let t = text.trim_start();
        let (defender_first, t) = match t.strip_prefix("受先") {
            Some(rest) => (true, rest.trim_start()),
            None => (false, t),
        };
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
                },
                t[1..].trim(),
            ));
        }
        None
    }

    /// Reads a stipulation's whole text (see [`Stipulation::parse_prefix`]); an error names
    /// what was not understood.
    pub fn parse(text: &str) -> Result<Stipulation, StipulationError> {
        match Stipulation::parse_prefix(text) {
            Some((s, "")) => Ok(s),
            Some((_, rest)) => Err(StipulationError::Unknown(rest.to_string())),
            None => Err(StipulationError::Unknown(text.trim().to_string())),
        }
    }
}

impl fmt::Display for Stipulation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
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
    let mut pos = root.clone();
    for (i, &m) in line.iter().enumerate() {
        if !movegen::is_legal_move(&pos, m) {
            return Err(format!("ply {}: {m} is not legal", i + 1));
        }
        if pos.side_to_move() == attacker && !movegen::gives_check(&pos, m) {
            return Err(format!(
                "ply {}: attacker move {m} does not give check",
                i + 1
            ));
        }
        pos.do_move(m);
        if i + 1 < line.len() && movegen::is_checkmate(&pos) {
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
    if movegen::is_checkmate(&pos) {
        Ok(())
    } else {
        Err("the final position is not checkmate".to_string())
    }
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
        };
        assert_eq!(verify_solution(&root, hs_first, &[mate]), Ok(()));
        let h_first = Stipulation {
            goal: Goal::Helpmate,
            defender_first: true,
        };
        assert!(verify_solution(&root, h_first, &[mate]).is_err());
    }
}
