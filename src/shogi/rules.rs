//! The rules a search, a solution check or an input runs under: normal shogi or a set of fairy
//! conditions, chosen once. Every question the search asks of the rules (which moves, is the
//! side to move in check, is it mated) goes through [`RuleSet`]: normal shogi's answers come
//! from `movegen` unchanged (the branch that picks them is the only cost plain rules pay), 打歩詰可
//! from the generator's `PawnDropMateAllowed` instance, changed piece powers from `powers`, a
//! capture rule or a paralysis rule (with or without changed powers) from `played`, and the
//! captures rule (強欲・禁欲) narrows whatever list the others produced.

use super::bitboard::Bitboard;
use super::capture_rule::CaptureSetting;
use super::conditions::{
    CaptureRule, Captures, Conditions, Paralysis, PawnDropMate, PawnDropMateAllowed, PieceMoves,
    Plain,
};
use super::movegen::{self, MoveList};
use super::position::Position;
use super::types::{Color, Move};
use super::{capture_moves, played, powers};

/// Which generator answers: normal shogi's, the one for changed powers, normal shogi's with
/// captures played (a capture rule alone), or the one that plays each move (a paralysis rule,
/// or a capture rule with changed powers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
enum Generator {
    #[default]
    Fixed,
    Powers,
    Captures,
    Played,
}

/// Normal shogi or fairy conditions, as the search uses them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RuleSet {
    conditions: Conditions,
    generator: Generator,
}

impl RuleSet {
    /// Normal shogi.
    pub const PLAIN: RuleSet = RuleSet::new(Conditions::NONE);

    pub const fn new(conditions: Conditions) -> RuleSet {
        let normal_powers = matches!(conditions.piece_moves, PieceMoves::Normal);
        let capture_rule = !matches!(conditions.capture_rule, CaptureRule::Normal);
        let generator = if !matches!(conditions.paralysis, Paralysis::None) {
            Generator::Played
        } else if capture_rule && normal_powers {
            Generator::Captures
        } else if capture_rule {
            Generator::Played
        } else if normal_powers {
            Generator::Fixed
        } else {
            Generator::Powers
        };
        RuleSet {
            conditions,
            generator,
        }
    }

    pub const fn conditions(self) -> Conditions {
        self.conditions
    }

    /// True when pieces move as in normal shogi, so the generator's shortcuts built on fixed
    /// powers (check tables, flight squares, the position's own check state) hold.
    #[inline]
    pub fn fixed_powers(self) -> bool {
        self.generator == Generator::Fixed
    }

    /// What a capture does under these rules: positions searched under them must play their
    /// captures so ([`Position::set_capture_setting`]).
    #[inline]
    pub fn capture_setting(self) -> CaptureSetting {
        played::capture_setting(self.conditions)
    }

    /// Makes `pos` play its captures under these rules.
    #[inline]
    pub fn adopt(self, pos: &mut Position) {
        pos.set_capture_setting(self.capture_setting());
    }

    #[inline]
    fn drop_mate_allowed(self) -> bool {
        self.conditions.pawn_drop_mate == PawnDropMate::Allowed
    }

    #[inline]
    fn narrow(self, pos: &Position, list: &mut MoveList) {
        if self.conditions.captures != Captures::Free {
            movegen::keep_allowed_captures(pos, self.conditions.captures, list);
        }
    }

    /// Is the king of `color` attacked in `pos`, whoever is to move?
    pub fn king_attacked(self, pos: &Position, color: Color) -> bool {
        match self.generator {
            Generator::Played => played::king_attacked(pos, self.conditions, color),
            _ => powers::king_attacked(pos, self.conditions.piece_moves, color),
        }
    }

    /// The pieces checking the side to move's king under these rules (for showing a line).
    pub fn checkers(self, pos: &Position) -> Bitboard {
        played::checkers(pos, self.conditions)
    }

    /// Is the side to move in check?
    #[inline]
    pub fn in_check(self, pos: &Position) -> bool {
        match self.generator {
            Generator::Fixed | Generator::Captures => pos.in_check(),
            Generator::Powers => powers::in_check(pos, self.conditions.piece_moves),
            Generator::Played => played::in_check(pos, self.conditions),
        }
    }

    /// The attacker's moves: its legal checks, narrowed by the captures rule.
    #[inline]
    pub fn checks(self, pos: &Position, list: &mut MoveList) {
        if self.fixed_powers() {
            if self.drop_mate_allowed() {
                movegen::checks_under::<PawnDropMateAllowed>(pos, list)
            } else {
                movegen::checks_under::<Plain>(pos, list)
            }
        } else if self.generator == Generator::Powers {
            powers::checks(pos, self.conditions, list)
        } else if self.generator == Generator::Captures {
            capture_moves::checks(pos, self.conditions, list)
        } else {
            played::checks(pos, self.conditions, list)
        }
        self.narrow(pos, list);
    }

    /// The attacker's checks that may mate at once: [`RuleSet::checks`], less (under plain
    /// piece powers, where the captures rule does not narrow and a pawn-drop mate is illegal)
    /// the pawn drops, none of which mates legally. Returns whether a check may have been left
    /// out: then `list` may be empty while `checks` is not.
    #[inline]
    pub fn checks_that_may_mate(self, pos: &Position, list: &mut MoveList) -> bool {
        if self.fixed_powers()
            && !self.drop_mate_allowed()
            && self.conditions.captures == Captures::Free
        {
            movegen::checks_that_may_mate_under::<Plain>(pos, list)
        } else {
            self.checks(pos, list);
            false
        }
    }

    /// Every legal move, narrowed by the captures rule.
    #[inline]
    pub fn legal(self, pos: &Position, list: &mut MoveList) {
        if self.fixed_powers() {
            if self.drop_mate_allowed() {
                movegen::legal_under::<PawnDropMateAllowed>(pos, list)
            } else {
                movegen::legal_under::<Plain>(pos, list)
            }
        } else if self.generator == Generator::Powers {
            powers::legal(pos, self.conditions, list)
        } else if self.generator == Generator::Captures {
            capture_moves::legal(pos, self.conditions, list)
        } else {
            played::legal(pos, self.conditions, list)
        }
        self.narrow(pos, list);
    }

    /// Every legal move of a side in check, narrowed by the captures rule.
    #[inline]
    pub fn evasions(self, pos: &Position, list: &mut MoveList) {
        if self.fixed_powers() {
            if self.drop_mate_allowed() {
                movegen::evasions_under::<PawnDropMateAllowed>(pos, list)
            } else {
                movegen::evasions_under::<Plain>(pos, list)
            }
        } else if self.generator == Generator::Powers {
            powers::legal(pos, self.conditions, list)
        } else if self.generator == Generator::Captures {
            capture_moves::legal(pos, self.conditions, list)
        } else {
            played::legal(pos, self.conditions, list)
        }
        self.narrow(pos, list);
    }

    /// Has the side to move, in check, a legal move? (The captures rule never empties a list.)
    #[inline]
    pub fn has_evasion(self, pos: &Position) -> bool {
        if self.fixed_powers() {
            if self.drop_mate_allowed() {
                movegen::has_evasion_under::<PawnDropMateAllowed>(pos)
            } else {
                movegen::has_evasion_under::<Plain>(pos)
            }
        } else if self.generator == Generator::Powers {
            powers::has_legal(pos, self.conditions)
        } else if self.generator == Generator::Captures {
            capture_moves::has_legal(pos, self.conditions)
        } else {
            played::has_legal(pos, self.conditions)
        }
    }

    /// Is the side to move checkmated?
    #[inline]
    pub fn is_checkmate(self, pos: &Position) -> bool {
        self.in_check(pos) && !self.has_evasion(pos)
    }

    /// Does `m`, legal in `pos`, give check?
    #[inline]
    pub fn gives_check(self, pos: &Position, m: Move) -> bool {
        match self.generator {
            Generator::Fixed => movegen::gives_check(pos, m),
            Generator::Powers => powers::gives_check(pos, self.conditions.piece_moves, m),
            Generator::Captures => capture_moves::gives_check(pos, m),
            Generator::Played => played::gives_check(pos, self.conditions, m),
        }
    }

    /// These rules with captures free: what is legal at all, whichever side's obligation the
    /// captures rule would narrow it by.
    pub fn without_captures_rule(self) -> RuleSet {
        RuleSet::new(Conditions {
            captures: Captures::Free,
            ..self.conditions
        })
    }

    /// Is `m` a legal move in `pos`? The captures rule is left out: whether it applies among
    /// all moves or among checks depends on the side's role. For input, not the hot path.
    pub fn is_legal_move(self, pos: &Position, m: Move) -> bool {
        let mut list = MoveList::new();
        self.without_captures_rule().legal(pos, &mut list);
        list.contains(m)
    }
}
