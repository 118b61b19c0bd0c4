//! The reference for the capture rules (キルケ, アンチキルケ, PWC) and the paralysis rules
//! (マドラシ, Kマドラシ), written square by square from their rules (docs/fairy.md) on the
//! reference board of `super`: homes from a table, emptiness judged on the board before the
//! move with the origin counted empty, each move tried on a copy and kept when the mover's king
//! is then attacked by no piece that is free to move. Moves are written as the rules' examples
//! write them: USI, then `/<square><piece>` for the piece a capture puts back on the board.

use super::{parse, square_name, Board, Man, Powers, KINDS};
use kyozume::shogi::conditions::{
    CaptureRule, Captures, Conditions, Paralysis, PawnDropMate, PieceMoves,
};
use kyozume::shogi::{Goal, Stipulation};
use std::collections::HashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capture {
    Normal,
    Circe,
    AntiCirce,
    Pwc,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Para {
    None,
    Madrasi,
    KMadrasi,
}

/// The rules a reference move list or solve follows.
#[derive(Clone, Copy, Debug)]
pub struct Rules2 {
    pub powers: Powers,
    pub drop_mate_ok: bool,
    /// 強欲 `Some(true)`, 禁欲 `Some(false)`.
    pub greedy: Option<bool>,
    pub capture: Capture,
    pub paralysis: Para,
}

impl Rules2 {
    pub const PLAIN: Rules2 = Rules2 {
        powers: Powers::Normal,
        drop_mate_ok: false,
        greedy: None,
        capture: Capture::Normal,
        paralysis: Para::None,
    };

    /// The same rules for the engine.
    pub fn conditions(self) -> Conditions {
        Conditions {
            piece_moves: match self.powers {
                Powers::Normal => PieceMoves::Normal,
                Powers::Annan => PieceMoves::Annan,
                Powers::Anhoku => PieceMoves::Anhoku,
                Powers::Taimen => PieceMoves::Taimen,
                Powers::Haimen => PieceMoves::Haimen,
            },
            pawn_drop_mate: if self.drop_mate_ok {
                PawnDropMate::Allowed
            } else {
                PawnDropMate::Illegal
            },
            captures: match self.greedy {
                None => Captures::Free,
                Some(true) => Captures::Greedy,
                Some(false) => Captures::Ascetic,
            },
            capture_rule: match self.capture {
                Capture::Normal => CaptureRule::Normal,
                Capture::Circe => CaptureRule::Circe,
                Capture::AntiCirce => CaptureRule::AntiCirce,
                Capture::Pwc => CaptureRule::Pwc,
            },
            paralysis: match self.paralysis {
                Para::None => Paralysis::None,
                Para::Madrasi => Paralysis::Madrasi,
                Para::KMadrasi => Paralysis::KMadrasi,
            },
        }
    }

    /// Is the man on (file, rank) paralysed: reached by an enemy man of the same kind and
    /// promoted state (kings only under Kマドラシ)?
    pub fn paralysed(self, b: &Board, file: usize, rank: usize) -> bool {
        let man = b.squares[rank][file - 1].unwrap();
        let kings = self.paralysis == Para::KMadrasi;
        if self.paralysis == Para::None || (man.kind == 'K' && !kings) {
            return false;
        }
        (0..9).any(|r| {
            (1..=9).any(|f| {
                b.squares[r][f - 1].is_some_and(|m| {
                    m.black != man.black && m.kind == man.kind && m.promoted == man.promoted
                }) && b.reach(self.powers, f, r).contains(&(file, rank))
            })
        })
    }

    /// Does a man of `black` that is not paralysed reach `target`?
    pub fn attacked_by(self, b: &Board, black: bool, target: (usize, usize)) -> bool {
        (0..9).any(|r| {
            (1..=9).any(|f| {
                b.squares[r][f - 1].is_some_and(|m| m.black == black)
                    && b.reach(self.powers, f, r).contains(&target)
                    && !self.paralysed(b, f, r)
            })
        })
    }

    pub fn in_check(self, b: &Board, black: bool) -> bool {
        b.king(black)
            .is_some_and(|k| self.attacked_by(b, !black, k))
    }

    /// The homes of a `black` piece of `kind` (unpromoted letter) for a capture on `file`:
    /// one, or two on file 5.
    fn homes(black: bool, kind: char, file: usize) -> Vec<(usize, usize)> {
        let back = if black { 8 } else { 0 };
        let pair = |near: usize| -> Vec<(usize, usize)> {
            let far = 10 - near;
            match file {
                1..=4 => vec![(near, back)],
                6..=9 => vec![(far, back)],
                _ => vec![(near, back), (far, back)],
            }
        };
        match kind {
            'P' => vec![(file, if black { 6 } else { 2 })],
            'L' => pair(1),
            'N' => pair(2),
            'S' => pair(3),
            'G' => pair(4),
            'B' => vec![if black { (8, 7) } else { (2, 1) }],
            'R' => vec![if black { (2, 7) } else { (8, 1) }],
            _ => vec![(5, back)],
        }
    }

    /// A man's letter as the examples write it.
    fn letter(man: Man) -> String {
        format!("{}{}", if man.promoted { "+" } else { "" }, man.kind)
    }

    /// Every legal move of the side to move, with the board after it.
    pub fn legal(self, b: &Board) -> Vec<(String, Board)> {
        let us = b.black_to_move;
        let mut out = Vec::new();
        let keep = |text: String, after: Board, out: &mut Vec<(String, Board)>| {
            if !self.in_check(&after, us) {
                out.push((text, after));
            }
        };
        for rank in 0..9 {
            for file in 1..=9 {
                let Some(man) = b.squares[rank][file - 1] else {
                    continue;
                };
                if man.black != us || self.paralysed(b, file, rank) {
                    continue;
                }
                for (tf, tr) in b.reach(self.powers, file, rank) {
                    let victim = b.squares[tr][tf - 1];
                    if victim.is_some_and(|m| m.black == us) {
                        continue;
                    }
                    let zone = |r: usize| Board::far(us, r) <= 2;
                    let can_promote = !man.promoted
                        && matches!(man.kind, 'P' | 'L' | 'N' | 'S' | 'B' | 'R')
                        && (zone(rank) || zone(tr));
                    for promote in [false, true] {
                        if promote && !can_promote {
                            continue;
                        }
                        let moved = Man {
                            promoted: man.promoted || promote,
                            ..man
                        };
                        let usi = format!(
                            "{}{}{}",
                            square_name(file, rank),
                            square_name(tf, tr),
                            if promote { "+" } else { "" }
                        );
                        for (suffix, after, end) in
                            self.outcomes(b, (file, rank), (tf, tr), moved, victim)
                        {
                            // Dead pieces and two pawns where the mover ends.
                            if !moved.promoted
                                && Board::dead(self.powers, moved.kind, Board::far(us, end.1))
                            {
                                continue;
                            }
                            if !moved.promoted
                                && moved.kind == 'P'
                                && end.0 != file
                                && b.has_pawn_on_file(us, end.0, None)
                            {
                                continue;
                            }
                            keep(format!("{usi}{suffix}"), after, &mut out);
                        }
                    }
                }
            }
        }
        for (k, &kind) in KINDS[..7].iter().enumerate() {
            if b.hands[usize::from(!us)][k] == 0 {
                continue;
            }
            for rank in 0..9 {
                for file in 1..=9 {
                    if b.squares[rank][file - 1].is_some()
                        || Board::dead(self.powers, kind, Board::far(us, rank))
                        || (kind == 'P' && b.has_pawn_on_file(us, file, None))
                    {
                        continue;
                    }
                    let mut after = b.clone();
                    after.hands[usize::from(!us)][k] -= 1;
                    after.squares[rank][file - 1] = Some(Man {
                        black: us,
                        kind,
                        promoted: false,
                    });
                    after.black_to_move = !us;
                    if kind == 'P'
                        && !self.drop_mate_ok
                        && !self.in_check(&after, us)
                        && self.in_check(&after, !us)
                        && self.legal(&after).is_empty()
                    {
                        continue;
                    }
                    keep(
                        format!("{kind}*{}", square_name(file, rank)),
                        after,
                        &mut out,
                    );
                }
            }
        }
        out
    }

    /// What moving `moved` (as it stands after promotion) from `from` to `to`, onto `victim`
    /// if any, leaves: (suffix, board, where the mover ends) for each choice.
    fn outcomes(
        self,
        b: &Board,
        from: (usize, usize),
        to: (usize, usize),
        moved: Man,
        victim: Option<Man>,
    ) -> Vec<(String, Board, (usize, usize))> {
        let us = moved.black;
        let mut base = b.clone();
        base.squares[from.1][from.0 - 1] = None;
        base.black_to_move = !us;
        let to_hand = |board: &mut Board, v: Man| {
            let k = KINDS.iter().position(|&k| k == v.kind).unwrap();
            board.hands[usize::from(!us)][k] += 1;
        };
        let plain = |v: Option<Man>| {
            let mut after = base.clone();
            after.squares[to.1][to.0 - 1] = Some(moved);
            if let Some(v) = v {
                to_hand(&mut after, v);
            }
            vec![(String::new(), after, to)]
        };
        let Some(v) = victim else {
            return plain(None);
        };
        // Empty for a home: the origin is, the capture square is not.
        let empty = |sq: (usize, usize)| sq != to && base.squares[sq.1][sq.0 - 1].is_none();
        let pawn_elsewhere = |black: bool, file: usize, except: (usize, usize)| {
            (0..9).any(|r| {
                (file, r) != except
                    && b.squares[r][file - 1]
                        == Some(Man {
                            black,
                            kind: 'P',
                            promoted: false,
                        })
                    && (file, r) != from
            })
        };
        match self.capture {
            Capture::Normal => plain(Some(v)),
            Capture::Circe => {
                if v.kind == 'P' && pawn_elsewhere(v.black, to.0, to) {
                    return plain(Some(v));
                }
                let homes: Vec<_> = Rules2::homes(v.black, v.kind, to.0)
                    .into_iter()
                    .filter(|&h| empty(h))
                    .collect();
                if homes.is_empty() {
                    return plain(Some(v));
                }
                homes
                    .into_iter()
                    .map(|h| {
                        let reborn = Man {
                            promoted: false,
                            ..v
                        };
                        let mut after = base.clone();
                        after.squares[to.1][to.0 - 1] = Some(moved);
                        after.squares[h.1][h.0 - 1] = Some(reborn);
                        let suffix =
                            format!("/{}{}", square_name(h.0, h.1), Rules2::letter(reborn));
                        (suffix, after, to)
                    })
                    .collect()
            }
            Capture::AntiCirce => {
                let homes = Rules2::homes(us, moved.kind, to.0);
                let stays =
                    moved.kind == 'P' && !moved.promoted && pawn_elsewhere(us, homes[0].0, from);
                let homes: Vec<_> = homes.into_iter().filter(|&h| empty(h)).collect();
                if stays || homes.is_empty() {
                    return plain(Some(v));
                }
                homes
                    .into_iter()
                    .map(|h| {
                        let mut after = base.clone();
                        after.squares[to.1][to.0 - 1] = None;
                        after.squares[h.1][h.0 - 1] = Some(moved);
                        to_hand(&mut after, v);
                        let suffix = format!("/{}{}", square_name(h.0, h.1), Rules2::letter(moved));
                        (suffix, after, h)
                    })
                    .collect()
            }
            Capture::Pwc => {
                let dead =
                    !v.promoted && Board::dead(self.powers, v.kind, Board::far(v.black, from.1));
                let doubled = v.kind == 'P' && !v.promoted && pawn_elsewhere(v.black, from.0, to);
                if dead || doubled {
                    return plain(Some(v));
                }
                let mut after = base.clone();
                after.squares[to.1][to.0 - 1] = Some(moved);
                after.squares[from.1][from.0 - 1] = Some(v);
                let suffix = format!("/{}{}", square_name(from.0, from.1), Rules2::letter(v));
                vec![(suffix, after, to)]
            }
        }
    }

    /// 強欲 keeps only the captures when there is one, 禁欲 only the other moves when there is
    /// one (a capture: a board move onto an occupied square of `b`).
    fn narrow(self, b: &Board, moves: &mut Vec<(String, Board)>) {
        let Some(greedy) = self.greedy else {
            return;
        };
        let is_capture = |(m, _): &(String, Board)| {
            let t = m.as_bytes();
            !m.contains('*')
                && b.squares[(t[3] - b'a') as usize][(t[2] - b'0') as usize - 1].is_some()
        };
        if moves.iter().any(|m| is_capture(m) == greedy) {
            moves.retain(|m| is_capture(m) == greedy);
        }
    }

    /// The moves the side to move may play (the attacker's checks only), after 強欲・禁欲.
    pub fn moves(self, b: &Board, attacker: bool) -> Vec<(String, Board)> {
        let mut moves = self.legal(b);
        if attacker {
            moves.retain(|(_, after)| self.in_check(after, after.black_to_move));
        }
        self.narrow(b, &mut moves);
        moves
    }

    /// Leaves at `depth` (every legal move, 強欲・禁欲 applied).
    pub fn perft(self, b: &Board, depth: u32) -> u64 {
        if depth == 0 {
            return 1;
        }
        let mut moves = self.legal(b);
        self.narrow(b, &mut moves);
        if depth == 1 {
            return moves.len() as u64;
        }
        moves
            .iter()
            .map(|(_, after)| self.perft(after, depth - 1))
            .sum()
    }

    /// Lines of exactly `r` plies that end in the goal, capped (see `Fairy::lines`).
    pub fn lines(
        self,
        memo: &mut HashMap<(Board, u32), u64>,
        board: &Board,
        r: u32,
        (attacker_black, selfmate): (bool, bool),
    ) -> u64 {
        if r == 0 {
            return 0;
        }
        if let Some(&n) = memo.get(&(board.clone(), r)) {
            return n;
        }
        let attacker = board.black_to_move == attacker_black;
        let mated_side = attacker_black == selfmate;
        let mut n = 0u64;
        for (_, after) in self.moves(board, attacker) {
            n += if r == 1 {
                let mated = after.black_to_move == mated_side
                    && self.in_check(&after, after.black_to_move)
                    && self.legal(&after).is_empty();
                u64::from(mated)
            } else {
                self.lines(memo, &after, r - 1, (attacker_black, selfmate))
            };
        }
        let n = n.min(1_000_000);
        memo.insert((board.clone(), r), n);
        n
    }

    /// The shortest length up to `max` plies and its number of lines.
    pub fn shortest(self, sfen: &str, stipulation: Stipulation, max: u32) -> Option<(u32, u64)> {
        let board = parse(sfen);
        let attacker_black = board.black_to_move != stipulation.defender_first;
        let selfmate = stipulation.goal == Goal::Selfmate;
        let mut memo = HashMap::new();
        (1..=max).find_map(|r| {
            let n = self.lines(&mut memo, &board, r, (attacker_black, selfmate));
            (n > 0).then_some((r, n))
        })
    }
}

/// The engine's move `m` in `pos` written as the reference writes it: USI, then the piece the
/// capture puts back on the board.
pub fn written(
    pos: &kyozume::shogi::Position,
    m: kyozume::shogi::Move,
    rules: kyozume::shogi::RuleSet,
) -> String {
    use kyozume::shogi::capture_rule::aftermath;
    let letter = |kind: kyozume::shogi::PieceType| {
        let base = kind.sfen_char();
        if kind.is_promoted() {
            format!("+{base}")
        } else {
            base.to_string()
        }
    };
    let mut text = m.to_string();
    if rules.conditions().capture_rule == CaptureRule::Normal
        || m.is_drop()
        || pos.piece_at(m.to()).is_none()
    {
        return text;
    }
    let after = aftermath(pos, rules.capture_setting(), m);
    if let Some((square, piece)) = after.victim_to {
        text.push_str(&format!("/{square}{}", letter(piece.kind())));
    } else if after.capturer_to != m.to() {
        let kind = pos.piece_at(m.from()).unwrap().kind();
        let kind = if m.is_promotion() {
            kind.promoted()
        } else {
            kind
        };
        text.push_str(&format!("/{}{}", after.capturer_to, letter(kind)));
    }
    text
}

impl Rules2 {
    /// Replays the H# `line` (moves written as [`written`] writes them) from `sfen`: every move
    /// legal here, every attacker move a check, the defender mated at the end.
    pub fn replay_helpmate(self, sfen: &str, line: &[String]) -> Result<(), String> {
        let mut board = parse(sfen);
        let attacker = board.black_to_move;
        for (i, text) in line.iter().enumerate() {
            let Some((_, after)) = self.legal(&board).into_iter().find(|(m, _)| m == text) else {
                return Err(format!("ply {}: {text} is not legal", i + 1));
            };
            if board.black_to_move == attacker && !self.in_check(&after, after.black_to_move) {
                return Err(format!("ply {}: {text} does not check", i + 1));
            }
            board = after;
        }
        let mated = board.black_to_move != attacker
            && self.in_check(&board, board.black_to_move)
            && self.legal(&board).is_empty();
        if mated {
            Ok(())
        } else {
            Err("the line does not end in mate".into())
        }
    }
}
