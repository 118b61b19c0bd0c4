//! Fairy conditions: rules that change how pieces move, which moves are legal or what a
//! capture does (docs/fairy.md states them).
//!
//! * Piece powers taken from a neighbour in the same file: **安南** (a friendly piece behind),
//!   **安北** (a friendly piece in front), **対面** (an enemy piece in front), **背面** (an enemy
//!   piece behind). At most one of them.
//! * What a capture does (the capture rules): **キルケ** (the captured piece is reborn on its
//!   home square), **アンチキルケ** (the capturer returns to its own home square), **PWC** (the
//!   captured piece takes the capturer's origin). At most one of them.
//! * **マドラシ**: a piece attacked by an enemy piece of its own kind is paralysed;
//!   **Kマドラシ** includes the kings. At most one of them.
//! * **打歩詰可**: a pawn drop may mate.
//! * **強欲**: a side that can capture must capture; **禁欲**: a side that has a move other than a
//!   capture must not capture. At most one of them. The attacker's obligation to check comes
//!   first: its captures are judged among its checks.
//!
//! This module holds what the conditions are and how composers name them; the move generator
//! and the search take them from [`Conditions`].

use std::fmt;

/// Where a piece's power comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PieceMoves {
    /// Its own type.
    #[default]
    Normal,
    /// 安南: the friendly piece directly behind it.
    Annan,
    /// 安北: the friendly piece directly in front of it.
    Anhoku,
    /// 対面: the enemy piece directly in front of it.
    Taimen,
    /// 背面: the enemy piece directly behind it.
    Haimen,
}

/// Whether a pawn drop may mate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PawnDropMate {
    /// Normal shogi: a pawn drop that mates is illegal, for both sides.
    #[default]
    Illegal,
    /// 打歩詰可.
    Allowed,
}

/// What the rules say of captures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Captures {
    /// Normal shogi.
    #[default]
    Free,
    /// 強欲: a capture must be played when one is allowed.
    Greedy,
    /// 禁欲: no capture while another move is allowed.
    Ascetic,
}

/// What a capture does to the captured piece or the capturer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CaptureRule {
    /// Normal shogi: the captured piece goes to the capturer's hand.
    #[default]
    Normal,
    /// キルケ: the captured piece is reborn, unpromoted and still its owner's, on its home
    /// square (to the capturer's hand when it cannot be).
    Circe,
    /// アンチキルケ (Japanese Anti-Circe): the capturer returns to its own home square (stays
    /// when it cannot); the captured piece goes to the capturer's hand.
    AntiCirce,
    /// PWC (Platzwechsel-Circe): the captured piece is put on the square the capturer came from
    /// (to the capturer's hand when it would be dead there or a second pawn on the file).
    Pwc,
}

/// Which pieces cannot move because an enemy piece of their own kind attacks them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Paralysis {
    /// Normal shogi.
    #[default]
    None,
    /// マドラシ: every piece but the kings.
    Madrasi,
    /// Kマドラシ: kings included.
    KMadrasi,
}

/// The rules the move generator follows, as a type: the generator is compiled once for each,
/// so normal shogi's ([`Plain`]) is exactly the code it would be without conditions.
pub trait Rules {
    /// Whether a pawn drop may mate (打歩詰可).
    const PAWN_DROP_MATE: PawnDropMate;
}

/// Normal shogi.
pub struct Plain;

impl Rules for Plain {
    const PAWN_DROP_MATE: PawnDropMate = PawnDropMate::Illegal;
}

/// 打歩詰可: a pawn drop may mate.
pub struct PawnDropMateAllowed;

impl Rules for PawnDropMateAllowed {
    const PAWN_DROP_MATE: PawnDropMate = PawnDropMate::Allowed;
}

/// The conditions in force (the default: none, normal shogi).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Conditions {
    pub piece_moves: PieceMoves,
    pub pawn_drop_mate: PawnDropMate,
    pub captures: Captures,
    pub capture_rule: CaptureRule,
    pub paralysis: Paralysis,
}

/// A condition's name that could not be read, or two that cannot go together.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConditionsError {
    #[error("unknown {what} '{value}' (expected one of: {expected})")]
    UnknownValue {
        what: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error("{first} and {second} cannot be combined (at most one of 安南, 安北, 対面, 背面, one of キルケ, アンチキルケ, PWC, one of マドラシ, Kマドラシ, and one of 強欲, 禁欲)")]
    Exclusive {
        first: &'static str,
        second: &'static str,
    },
}

/// The Japanese names, longest first where one begins another (打歩詰可 before 打歩可).
const NAMES: [(&str, Condition); 14] = [
    (
        "アンチキルケ",
        Condition::CaptureRule(CaptureRule::AntiCirce),
    ),
    ("キルケ", Condition::CaptureRule(CaptureRule::Circe)),
    ("PWC", Condition::CaptureRule(CaptureRule::Pwc)),
    ("Kマドラシ", Condition::Paralysis(Paralysis::KMadrasi)),
    ("Ｋマドラシ", Condition::Paralysis(Paralysis::KMadrasi)),
    ("マドラシ", Condition::Paralysis(Paralysis::Madrasi)),
    ("打歩詰可", Condition::PawnDropMate),
    ("打歩可", Condition::PawnDropMate),
    ("安南", Condition::Moves(PieceMoves::Annan)),
    ("安北", Condition::Moves(PieceMoves::Anhoku)),
    ("対面", Condition::Moves(PieceMoves::Taimen)),
    ("背面", Condition::Moves(PieceMoves::Haimen)),
    ("強欲", Condition::Captures(Captures::Greedy)),
    ("禁欲", Condition::Captures(Captures::Ascetic)),
];

/// The English names: the USI options' values (`Annan`, `Greedy`), and `PawnDropMate` for
/// 打歩詰可. Compared in any case; a word ends at a space, `,` or `+`.
const ENGLISH: [(&str, &str, Condition); 12] = [
    ("annan", "安南", Condition::Moves(PieceMoves::Annan)),
    ("anhoku", "安北", Condition::Moves(PieceMoves::Anhoku)),
    ("taimen", "対面", Condition::Moves(PieceMoves::Taimen)),
    ("haimen", "背面", Condition::Moves(PieceMoves::Haimen)),
    ("pawndropmate", "打歩詰可", Condition::PawnDropMate),
    ("greedy", "強欲", Condition::Captures(Captures::Greedy)),
    ("ascetic", "禁欲", Condition::Captures(Captures::Ascetic)),
    (
        "circe",
        "キルケ",
        Condition::CaptureRule(CaptureRule::Circe),
    ),
    (
        "anticirce",
        "アンチキルケ",
        Condition::CaptureRule(CaptureRule::AntiCirce),
    ),
    ("pwc", "PWC", Condition::CaptureRule(CaptureRule::Pwc)),
    (
        "madrasi",
        "マドラシ",
        Condition::Paralysis(Paralysis::Madrasi),
    ),
    (
        "kmadrasi",
        "Kマドラシ",
        Condition::Paralysis(Paralysis::KMadrasi),
    ),
];

/// The first name of `text` (Japanese, or an English word), and the text after it and the
/// separators that follow.
fn next_name(text: &str) -> Option<(&'static str, Condition, &str)> {
    for (name, condition) in NAMES {
        if let Some(after) = text.strip_prefix(name) {
            return Some((name, condition, after));
        }
    }
    let end = text
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(text.len());
    let word = text[..end].to_ascii_lowercase();
    ENGLISH
        .iter()
        .find(|(english, _, _)| *english == word)
        .map(|&(_, name, condition)| (name, condition, &text[end..]))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Condition {
    Moves(PieceMoves),
    PawnDropMate,
    Captures(Captures),
    CaptureRule(CaptureRule),
    Paralysis(Paralysis),
}

impl Conditions {
    /// Normal shogi.
    pub const NONE: Conditions = Conditions {
        piece_moves: PieceMoves::Normal,
        pawn_drop_mate: PawnDropMate::Illegal,
        captures: Captures::Free,
        capture_rule: CaptureRule::Normal,
        paralysis: Paralysis::None,
    };

    /// Whether these are normal shogi's rules.
    pub fn is_none(self) -> bool {
        self == Conditions::NONE
    }

    /// Reads the condition names composers print before a stipulation (`安南`, `対面打歩詰可`,
    /// `禁欲`, in any order), or the English ones (`Annan`, `Greedy`, `PawnDropMate`, apart by
    /// spaces, `,` or `+`): the conditions and the text after them, trimmed. Two of one group
    /// (`安南対面`, `強欲禁欲`) are an error; text that names no condition is left whole.
    pub fn parse_prefix(text: &str) -> Result<(Conditions, &str), ConditionsError> {
        let mut conditions = Conditions::NONE;
        // The name already read of each exclusive group: piece moves, captures (強欲・禁欲),
        // capture rule, paralysis.
        let mut named: [Option<&'static str>; 4] = [None; 4];
        let mut rest = text.trim_start();
        while let Some((name, condition, after)) = next_name(rest) {
            let group = match condition {
                Condition::Moves(moves) => {
                    conditions.piece_moves = moves;
                    Some(0)
                }
                Condition::Captures(captures) => {
                    conditions.captures = captures;
                    Some(1)
                }
                Condition::CaptureRule(rule) => {
                    conditions.capture_rule = rule;
                    Some(2)
                }
                Condition::Paralysis(paralysis) => {
                    conditions.paralysis = paralysis;
                    Some(3)
                }
                Condition::PawnDropMate => {
                    conditions.pawn_drop_mate = PawnDropMate::Allowed;
                    None
                }
            };
            if let Some(group) = group {
                if let Some(first) = named[group] {
                    return Err(ConditionsError::Exclusive {
                        first,
                        second: name,
                    });
                }
                named[group] = Some(name);
            }
            rest = after.trim_start_matches(|c: char| c.is_whitespace() || c == ',' || c == '+');
        }
        Ok((conditions, rest))
    }

    /// The names as composers print them before the stipulation, in a fixed order (`安南`,
    /// `キルケ`, `マドラシ`, `打歩詰可`, `強欲`); empty for normal shogi.
    pub fn japanese(self) -> String {
        let moves = match self.piece_moves {
            PieceMoves::Normal => "",
            PieceMoves::Annan => "安南",
            PieceMoves::Anhoku => "安北",
            PieceMoves::Taimen => "対面",
            PieceMoves::Haimen => "背面",
        };
        let drop = match self.pawn_drop_mate {
            PawnDropMate::Illegal => "",
            PawnDropMate::Allowed => "打歩詰可",
        };
        let captures = match self.captures {
            Captures::Free => "",
            Captures::Greedy => "強欲",
            Captures::Ascetic => "禁欲",
        };
        let rule = match self.capture_rule {
            CaptureRule::Normal => "",
            CaptureRule::Circe => "キルケ",
            CaptureRule::AntiCirce => "アンチキルケ",
            CaptureRule::Pwc => "PWC",
        };
        let paralysis = match self.paralysis {
            Paralysis::None => "",
            Paralysis::Madrasi => "マドラシ",
            Paralysis::KMadrasi => "Kマドラシ",
        };
        format!("{moves}{rule}{paralysis}{drop}{captures}")
    }
}

impl PieceMoves {
    /// The USI option's values, in order.
    pub const VALUES: &'static str = "Normal, Annan, Anhoku, Taimen, Haimen";

    /// The USI option's value.
    pub fn usi_name(self) -> &'static str {
        match self {
            PieceMoves::Normal => "Normal",
            PieceMoves::Annan => "Annan",
            PieceMoves::Anhoku => "Anhoku",
            PieceMoves::Taimen => "Taimen",
            PieceMoves::Haimen => "Haimen",
        }
    }
}

impl std::str::FromStr for PieceMoves {
    type Err = ConditionsError;

    /// A USI option value, in any case, or the Japanese name.
    fn from_str(s: &str) -> Result<PieceMoves, ConditionsError> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "normal" | "none" => PieceMoves::Normal,
            "annan" | "安南" => PieceMoves::Annan,
            "anhoku" | "安北" => PieceMoves::Anhoku,
            "taimen" | "対面" => PieceMoves::Taimen,
            "haimen" | "背面" => PieceMoves::Haimen,
            _ => {
                return Err(ConditionsError::UnknownValue {
                    what: "PieceMoves",
                    value: s.trim().to_string(),
                    expected: PieceMoves::VALUES,
                })
            }
        })
    }
}

impl PawnDropMate {
    /// The USI option's values, in order.
    pub const VALUES: &'static str = "Illegal, Allowed";

    /// The USI option's value.
    pub fn usi_name(self) -> &'static str {
        match self {
            PawnDropMate::Illegal => "Illegal",
            PawnDropMate::Allowed => "Allowed",
        }
    }
}

impl std::str::FromStr for PawnDropMate {
    type Err = ConditionsError;

    fn from_str(s: &str) -> Result<PawnDropMate, ConditionsError> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "illegal" => PawnDropMate::Illegal,
            "allowed" | "打歩詰可" | "打歩可" => PawnDropMate::Allowed,
            _ => {
                return Err(ConditionsError::UnknownValue {
                    what: "PawnDropMate",
                    value: s.trim().to_string(),
                    expected: PawnDropMate::VALUES,
                })
            }
        })
    }
}

impl Captures {
    /// The USI option's values, in order.
    pub const VALUES: &'static str = "Free, Greedy, Ascetic";

    /// The USI option's value.
    pub fn usi_name(self) -> &'static str {
        match self {
            Captures::Free => "Free",
            Captures::Greedy => "Greedy",
            Captures::Ascetic => "Ascetic",
        }
    }
}

impl std::str::FromStr for Captures {
    type Err = ConditionsError;

    fn from_str(s: &str) -> Result<Captures, ConditionsError> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "free" => Captures::Free,
            "greedy" | "強欲" => Captures::Greedy,
            "ascetic" | "禁欲" => Captures::Ascetic,
            _ => {
                return Err(ConditionsError::UnknownValue {
                    what: "Captures",
                    value: s.trim().to_string(),
                    expected: Captures::VALUES,
                })
            }
        })
    }
}

impl CaptureRule {
    /// The USI option's values, in order.
    pub const VALUES: &'static str = "Normal, Circe, AntiCirce, PWC";

    /// The USI option's value.
    pub fn usi_name(self) -> &'static str {
        match self {
            CaptureRule::Normal => "Normal",
            CaptureRule::Circe => "Circe",
            CaptureRule::AntiCirce => "AntiCirce",
            CaptureRule::Pwc => "PWC",
        }
    }
}

impl std::str::FromStr for CaptureRule {
    type Err = ConditionsError;

    fn from_str(s: &str) -> Result<CaptureRule, ConditionsError> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "normal" | "none" => CaptureRule::Normal,
            "circe" | "キルケ" => CaptureRule::Circe,
            "anticirce" | "アンチキルケ" => CaptureRule::AntiCirce,
            "pwc" => CaptureRule::Pwc,
            _ => {
                return Err(ConditionsError::UnknownValue {
                    what: "CaptureRule",
                    value: s.trim().to_string(),
                    expected: CaptureRule::VALUES,
                })
            }
        })
    }
}

impl Paralysis {
    /// The USI option's values, in order.
    pub const VALUES: &'static str = "None, Madrasi, KMadrasi";

    /// The USI option's value.
    pub fn usi_name(self) -> &'static str {
        match self {
            Paralysis::None => "None",
            Paralysis::Madrasi => "Madrasi",
            Paralysis::KMadrasi => "KMadrasi",
        }
    }
}

impl std::str::FromStr for Paralysis {
    type Err = ConditionsError;

    fn from_str(s: &str) -> Result<Paralysis, ConditionsError> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "none" | "normal" => Paralysis::None,
            "madrasi" | "マドラシ" => Paralysis::Madrasi,
            "kmadrasi" | "kマドラシ" | "ｋマドラシ" => Paralysis::KMadrasi,
            _ => {
                return Err(ConditionsError::UnknownValue {
                    what: "Paralysis",
                    value: s.trim().to_string(),
                    expected: Paralysis::VALUES,
                })
            }
        })
    }
}

impl fmt::Display for Conditions {
    /// The USI values of the conditions in force, `none` for normal shogi.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_none() {
            return f.write_str("none");
        }
        let mut parts = Vec::new();
        if self.piece_moves != PieceMoves::Normal {
            parts.push(self.piece_moves.usi_name());
        }
        if self.capture_rule != CaptureRule::Normal {
            parts.push(self.capture_rule.usi_name());
        }
        if self.paralysis != Paralysis::None {
            parts.push(self.paralysis.usi_name());
        }
        if self.pawn_drop_mate == PawnDropMate::Allowed {
            parts.push("PawnDropMate Allowed");
        }
        if self.captures != Captures::Free {
            parts.push(self.captures.usi_name());
        }
        f.write_str(&parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_as_composers_print_them() {
        let annan = Conditions {
            piece_moves: PieceMoves::Annan,
            ..Conditions::NONE
        };
        assert_eq!(
            Conditions::parse_prefix("安南ばか詰"),
            Ok((annan, "ばか詰"))
        );
        let taimen_drop = Conditions {
            piece_moves: PieceMoves::Taimen,
            pawn_drop_mate: PawnDropMate::Allowed,
            ..Conditions::NONE
        };
        assert_eq!(
            Conditions::parse_prefix("対面打歩詰可協力自玉詰 8手"),
            Ok((taimen_drop, "協力自玉詰 8手"))
        );
        assert_eq!(
            Conditions::parse_prefix("打歩可 禁欲 ばか詰").map(|c| c.0.captures),
            Ok(Captures::Ascetic)
        );
        // Nothing named: the text comes back whole.
        assert_eq!(
            Conditions::parse_prefix("協力詰"),
            Ok((Conditions::NONE, "協力詰"))
        );
        // Two of a group.
        assert!(matches!(
            Conditions::parse_prefix("安南対面ばか詰"),
            Err(ConditionsError::Exclusive { .. })
        ));
        assert!(matches!(
            Conditions::parse_prefix("強欲禁欲ばか詰"),
            Err(ConditionsError::Exclusive { .. })
        ));
        // English names, as the USI options spell them.
        let greedy_annan = Conditions {
            piece_moves: PieceMoves::Annan,
            captures: Captures::Greedy,
            ..Conditions::NONE
        };
        assert_eq!(
            Conditions::parse_prefix("greedy+Annan HS#"),
            Ok((greedy_annan, "HS#"))
        );
        assert_eq!(
            Conditions::parse_prefix("Annan, PawnDropMate"),
            Ok((
                Conditions {
                    pawn_drop_mate: PawnDropMate::Allowed,
                    ..Conditions {
                        piece_moves: PieceMoves::Annan,
                        ..Conditions::NONE
                    }
                },
                ""
            ))
        );
        // The capture and paralysis rules, as composers print them.
        let circe = |paralysis| Conditions {
            capture_rule: CaptureRule::Circe,
            paralysis,
            ..Conditions::NONE
        };
        assert_eq!(
            Conditions::parse_prefix("キルケマドラシばか詰"),
            Ok((circe(Paralysis::Madrasi), "ばか詰"))
        );
        assert_eq!(
            Conditions::parse_prefix("Ｋマドラシキルケばか詰"),
            Ok((circe(Paralysis::KMadrasi), "ばか詰"))
        );
        assert_eq!(
            Conditions::parse_prefix("アンチキルケ協力自玉詰").map(|c| c.0.capture_rule),
            Ok(CaptureRule::AntiCirce)
        );
        assert_eq!(
            Conditions::parse_prefix("PWC受先ばか詰").map(|c| c.0.capture_rule),
            Ok(CaptureRule::Pwc)
        );
        assert_eq!(
            Conditions::parse_prefix("anticirce kmadrasi").map(|c| c.0),
            Ok(Conditions {
                capture_rule: CaptureRule::AntiCirce,
                paralysis: Paralysis::KMadrasi,
                ..Conditions::NONE
            })
        );
        for two in ["キルケPWC", "マドラシKマドラシ", "Circe AntiCirce"] {
            assert!(
                matches!(
                    Conditions::parse_prefix(two),
                    Err(ConditionsError::Exclusive { .. })
                ),
                "{two}"
            );
        }
        // A word that merely begins with a name is not one.
        assert_eq!(
            Conditions::parse_prefix("annanx"),
            Ok((Conditions::NONE, "annanx"))
        );
    }

    #[test]
    fn names_go_back_and_forth() {
        for moves in [
            PieceMoves::Normal,
            PieceMoves::Annan,
            PieceMoves::Anhoku,
            PieceMoves::Taimen,
            PieceMoves::Haimen,
        ] {
            for drop in [PawnDropMate::Illegal, PawnDropMate::Allowed] {
                for captures in [Captures::Free, Captures::Greedy, Captures::Ascetic] {
                    for capture_rule in [
                        CaptureRule::Normal,
                        CaptureRule::Circe,
                        CaptureRule::AntiCirce,
                        CaptureRule::Pwc,
                    ] {
                        for paralysis in [Paralysis::None, Paralysis::Madrasi, Paralysis::KMadrasi]
                        {
                            let c = Conditions {
                                piece_moves: moves,
                                pawn_drop_mate: drop,
                                captures,
                                capture_rule,
                                paralysis,
                            };
                            let printed = format!("{}ばか詰", c.japanese());
                            assert_eq!(Conditions::parse_prefix(&printed), Ok((c, "ばか詰")));
                            let english = c.to_string().replace(" Allowed", "");
                            assert_eq!(
                                Conditions::parse_prefix(&english).map(|(c, _)| c),
                                Ok(c),
                                "{english}"
                            );
                            assert_eq!(
                                capture_rule.usi_name().parse::<CaptureRule>(),
                                Ok(capture_rule)
                            );
                            assert_eq!(paralysis.usi_name().parse::<Paralysis>(), Ok(paralysis));
                        }
                    }
                    assert_eq!(moves.usi_name().parse::<PieceMoves>(), Ok(moves));
                    assert_eq!(drop.usi_name().parse::<PawnDropMate>(), Ok(drop));
                    assert_eq!(captures.usi_name().parse::<Captures>(), Ok(captures));
                }
            }
        }
        assert!("Annam".parse::<PieceMoves>().is_err());
        assert_eq!(Conditions::NONE.to_string(), "none");
    }
}
