//! SFEN parsing and printing, and USI move notation read against a position.

use super::attacks::standing_ranks;
use super::capture_rule;
use super::conditions::CaptureRule;
use super::position::Position;
use super::rules::RuleSet;
use super::types::{Color, Move, Piece, PieceType, Square};
use thiserror::Error;

pub const STARTPOS_SFEN: &str = "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1";

/// Why an SFEN string was rejected. Ranks are printed as in USI (`a` = top rank), files as digits.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SfenError {
    #[error("empty SFEN")]
    Empty,
    #[error("SFEN needs 3 or 4 fields (board, side, hand[, move number]), found {0}")]
    FieldCount(usize),
    #[error("board has {0} ranks, expected 9")]
    RankCount(usize),
    #[error("rank {rank}: unexpected character '{ch}'")]
    BadBoardChar { rank: char, ch: char },
    #[error("rank {rank}: more than 9 squares")]
    RankTooLong { rank: char },
    #[error("rank {rank}: only {squares} squares, expected 9")]
    RankTooShort { rank: char, squares: u8 },
    #[error("rank {rank}: '+' must be followed by a promotable piece letter (P L N S B R)")]
    BadPromotion { rank: char },
    #[error("side to move must be 'b' or 'w', found '{0}'")]
    BadSide(String),
    #[error("hand: unexpected character '{0}'")]
    BadHandChar(char),
    #[error("hand: count {count} for '{piece}' is not valid")]
    BadHandCount { piece: char, count: u32 },
    #[error("hand: a count must be followed by a piece letter")]
    DanglingHandCount,
    #[error("hand: a king cannot be in hand")]
    KingInHand,
    #[error("move number must be a positive integer, found '{0}'")]
    BadMoveNumber(String),
    #[error("{color:?} has more than one king")]
    TwoKings { color: Color },
    #[error("too many pieces of kind '{kind}': {count} (a set holds {max})")]
    TooManyPieces { kind: char, count: u32, max: u8 },
    #[error("{color:?} has two unpromoted pawns on file {file}")]
    DoublePawn { color: Color, file: u8 },
    #[error("piece '{piece}' on {square} can never move")]
    DeadPiece { piece: String, square: Square },
    #[error("the side not to move ({0:?}) is in check")]
    OpponentInCheck(Color),
}

/// Why a USI move string was rejected in a position.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MoveError {
    #[error("'{0}' is not a USI move (expected e.g. 7g7f, 2b8h+ or P*5e)")]
    Syntax(String),
    #[error("'{0}': no piece on the origin square")]
    EmptyOrigin(String),
    #[error("'{0}': the piece on the origin square belongs to the opponent")]
    NotOwnPiece(String),
    #[error("'{0}': piece not in hand")]
    NotInHand(String),
    #[error("'{0}' is not legal in this position")]
    Illegal(String),
}

fn rank_char(rank: usize) -> char {
    (b'a' + rank as u8) as char
}

impl Position {
    /// The initial position of a shogi game.
    pub fn startpos() -> Position {
        Position::from_sfen(STARTPOS_SFEN).expect("start position SFEN is valid")
    }

    /// Parses SFEN (`board side hand [move-number]`), validating the position.
    pub fn from_sfen(text: &str) -> Result<Position, SfenError> {
        Position::from_sfen_under(text, RuleSet::PLAIN)
    }

    /// Parses SFEN, validating the position under `rules`: where pieces may stand and whether
    /// the side not to move is in check depend on the piece powers.
    pub fn from_sfen_under(text: &str, rules: RuleSet) -> Result<Position, SfenError> {
        let fields: Vec<&str> = text.split_whitespace().collect();
        if fields.is_empty() {
            return Err(SfenError::Empty);
        }
        if !(3..=4).contains(&fields.len()) {
            return Err(SfenError::FieldCount(fields.len()));
        }
        let mut pos = Position::empty();
        parse_board(&mut pos, fields[0])?;
        let side = match fields[1] {
            "b" => Color::Black,
            "w" => Color::White,
            other => return Err(SfenError::BadSide(other.to_string())),
        };
        parse_hand(&mut pos, fields[2])?;
        let number = match fields.get(3) {
            None => 1,
            Some(s) => s
                .parse::<u32>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| SfenError::BadMoveNumber(s.to_string()))?,
        };
        pos.set_side_and_number(side, number);
        rules.adopt(&mut pos);
        validate(&pos, rules)?;
        pos.finish_setup();
        Ok(pos)
    }

    /// Prints the position as SFEN.
    pub fn to_sfen(&self) -> String {
        let mut s = String::with_capacity(96);
        for rank in 0..9 {
            if rank > 0 {
                s.push('/');
            }
            let mut empty = 0;
            for file in (0..9).rev() {
                match self.piece_at(Square::new(file, rank)) {
                    None => empty += 1,
                    Some(p) => {
                        if empty > 0 {
                            s.push_str(&empty.to_string());
                            empty = 0;
                        }
                        s.push_str(&p.sfen());
                    }
                }
            }
            if empty > 0 {
                s.push_str(&empty.to_string());
            }
        }
        s.push(' ');
        s.push(self.side_to_move().sfen_char());
        s.push(' ');
        let mut hand = String::new();
        for color in Color::ALL {
            for kind in PieceType::HAND_PRINT_ORDER {
                let n = self.hand(color).count(kind);
                if n > 1 {
                    hand.push_str(&n.to_string());
                }
                if n > 0 {
                    let c = kind.sfen_char();
                    hand.push(if color == Color::Black {
                        c
                    } else {
                        c.to_ascii_lowercase()
                    });
                }
            }
        }
        if hand.is_empty() {
            hand.push('-');
        }
        s.push_str(&hand);
        s.push(' ');
        s.push_str(&self.move_number().to_string());
        s
    }

    /// Why this position is not one `rules` allow, if it is not: a piece where it could never
    /// move, or the side not to move in check (both depend on the piece powers).
    pub fn validate_under(&self, rules: RuleSet) -> Result<(), SfenError> {
        validate(self, rules)
    }

    /// Parses a USI move (`7g7f`, `2b8h+`, `P*5e`) and checks that it is legal here.
    pub fn parse_move(&self, text: &str) -> Result<Move, MoveError> {
        self.parse_move_under(text, RuleSet::PLAIN)
    }

    /// Parses a USI move and checks that it is legal here under `rules`. Under a capture rule
    /// a capture may name the square of its reborn, returning or placed piece (`5c5b/7a`);
    /// without it, a capture on file 5 takes the home on the file-1 side when that is legal.
    pub fn parse_move_under(&self, text: &str, rules: RuleSet) -> Result<Move, MoveError> {
        let whole = text;
        let (text, named) = match whole.split_once('/') {
            Some((text, square)) => (
                text,
                Some(Square::from_usi(square).ok_or_else(|| MoveError::Syntax(whole.to_string()))?),
            ),
            None => (whole, None),
        };
        let m = self.parse_plain_move(text)?;
        let legal = |m: Move| rules.is_legal_move(self, m);
        let far = m.choosing_far_home();
        let capture_rule = rules.conditions().capture_rule != CaptureRule::Normal;
        let capture = capture_rule && !m.is_drop() && self.piece_at(m.to()).is_some();
        match named {
            None if legal(m) => Ok(m),
            None if capture && legal(far) => Ok(far),
            None => Err(MoveError::Illegal(text.to_string())),
            Some(square) => {
                let ends = |m: Move| {
                    let after = capture_rule::aftermath(self, rules.capture_setting(), m);
                    after.victim_to.map(|(sq, _)| sq) == Some(square)
                        || (after.capturer_to == square && square != m.to())
                };
                // Legal first: where a piece ends is asked only of a move that can be played (a
                // gold "promoting" has no promoted kind to end as).
                [m, far]
                    .into_iter()
                    .find(|&m| capture && legal(m) && ends(m))
                    .ok_or_else(|| MoveError::Illegal(whole.to_string()))
            }
        }
    }

    /// Parses a USI move without a suffix (syntax, origin and hand only).
    fn parse_plain_move(&self, text: &str) -> Result<Move, MoveError> {
        let syntax = || MoveError::Syntax(text.to_string());
        let b = text.as_bytes();
        let m = if b.len() == 4 && b[1] == b'*' {
            let kind = PieceType::from_sfen_char(b[0] as char)
                .filter(|k| *k != PieceType::King && b[0].is_ascii_uppercase())
                .ok_or_else(syntax)?;
            let to = Square::from_usi(&text[2..4]).ok_or_else(syntax)?;
            if !self.hand(self.side_to_move()).has(kind) {
                return Err(MoveError::NotInHand(text.to_string()));
            }
            Move::drop(kind, to)
        } else if (b.len() == 4 || (b.len() == 5 && b[4] == b'+')) && text.is_ascii() {
            let from = Square::from_usi(&text[0..2]).ok_or_else(syntax)?;
            let to = Square::from_usi(&text[2..4]).ok_or_else(syntax)?;
            match self.piece_at(from) {
                None => return Err(MoveError::EmptyOrigin(text.to_string())),
                Some(p) if p.color() != self.side_to_move() => {
                    return Err(MoveError::NotOwnPiece(text.to_string()))
                }
                Some(_) => {}
            }
            Move::normal(from, to, b.len() == 5)
        } else {
            return Err(syntax());
        };
        Ok(m)
    }
}

fn parse_board(pos: &mut Position, board: &str) -> Result<(), SfenError> {
    let ranks: Vec<&str> = board.split('/').collect();
    if ranks.len() != 9 {
        return Err(SfenError::RankCount(ranks.len()));
    }
    for (rank, row) in ranks.iter().enumerate() {
        let rc = rank_char(rank);
        let mut file: i32 = 8; // files are listed from 9 down to 1
        let mut promoted = false;
        for ch in row.chars() {
            if let Some(d) = ch.to_digit(10) {
                if promoted || d == 0 {
                    return Err(if promoted {
                        SfenError::BadPromotion { rank: rc }
                    } else {
                        SfenError::BadBoardChar { rank: rc, ch }
                    });
                }
                file -= d as i32;
                if file < -1 {
                    return Err(SfenError::RankTooLong { rank: rc });
                }
                continue;
            }
            if ch == '+' {
                if promoted {
                    return Err(SfenError::BadPromotion { rank: rc });
                }
                promoted = true;
                continue;
            }
            let kind =
                PieceType::from_sfen_char(ch).ok_or(SfenError::BadBoardChar { rank: rc, ch })?;
            if file < 0 {
                return Err(SfenError::RankTooLong { rank: rc });
            }
            let kind = if promoted {
                if !kind.can_promote() {
                    return Err(SfenError::BadPromotion { rank: rc });
                }
                kind.promoted()
            } else {
                kind
            };
            promoted = false;
            let color = if ch.is_ascii_uppercase() {
                Color::Black
            } else {
                Color::White
            };
            let sq = Square::new(file as u8, rank as u8);
            if kind == PieceType::King && pos.king(color).is_some() {
                return Err(SfenError::TwoKings { color });
            }
            pos.put_piece(sq, Piece::new(color, kind));
            file -= 1;
        }
        if promoted {
            return Err(SfenError::BadPromotion { rank: rc });
        }
        if file >= 0 {
            return Err(SfenError::RankTooShort {
                rank: rc,
                squares: (8 - file) as u8,
            });
        }
    }
    Ok(())
}

fn parse_hand(pos: &mut Position, hand: &str) -> Result<(), SfenError> {
    if hand == "-" {
        return Ok(());
    }
    let mut count: Option<u32> = None;
    for ch in hand.chars() {
        if let Some(d) = ch.to_digit(10) {
            let c = count.unwrap_or(0) * 10 + d;
            if c > 99 {
                return Err(SfenError::BadHandCount {
                    piece: '?',
                    count: c,
                });
            }
            count = Some(c);
            continue;
        }
        let kind = PieceType::from_sfen_char(ch).ok_or(SfenError::BadHandChar(ch))?;
        if kind == PieceType::King {
            return Err(SfenError::KingInHand);
        }
        let n = count.take().unwrap_or(1);
        if n == 0 {
            return Err(SfenError::BadHandCount {
                piece: ch,
                count: 0,
            });
        }
        let color = if ch.is_ascii_uppercase() {
            Color::Black
        } else {
            Color::White
        };
        let total = pos.hand(color).count(kind) as u32 + n;
        if total > kind.set_count() as u32 {
            return Err(SfenError::TooManyPieces {
                kind: kind.sfen_char(),
                count: total,
                max: kind.set_count(),
            });
        }
        pos.set_hand(color, kind, total as u8);
    }
    if count.is_some() {
        return Err(SfenError::DanglingHandCount);
    }
    Ok(())
}

fn validate(pos: &Position, rules: RuleSet) -> Result<(), SfenError> {
    let powers = rules.conditions().piece_moves;
    // Piece counts per base kind, board and hands together.
    let mut counts = [0u32; PieceType::NUM];
    for sq in Square::all() {
        if let Some(p) = pos.piece_at(sq) {
            counts[p.kind().unpromoted().index()] += 1;
            let ranks = standing_ranks(powers, p.color(), p.kind());
            if !ranks.has(sq) {
                return Err(SfenError::DeadPiece {
                    piece: p.sfen(),
                    square: sq,
                });
            }
        }
    }
    for color in Color::ALL {
        for kind in PieceType::HAND {
            counts[kind.index()] += pos.hand(color).count(kind) as u32;
        }
    }
    for kind in PieceType::HAND.into_iter().chain([PieceType::King]) {
        if counts[kind.index()] > kind.set_count() as u32 {
            return Err(SfenError::TooManyPieces {
                kind: kind.sfen_char(),
                count: counts[kind.index()],
                max: kind.set_count(),
            });
        }
    }
    for color in Color::ALL {
        let pawns = pos.pieces(color, PieceType::Pawn);
        for file in 0..9u8 {
            if (pawns & super::attacks::file_mask(file)).has_many() {
                return Err(SfenError::DoublePawn {
                    color,
                    file: file + 1,
                });
            }
        }
    }
    let them = !pos.side_to_move();
    if rules.king_attacked(pos, them) {
        return Err(SfenError::OpponentInCheck(them));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn startpos_round_trip() {
        let p = Position::startpos();
        assert_eq!(p.to_sfen(), STARTPOS_SFEN);
        assert_eq!(p.key(), p.compute_key());
    }

    #[test]
    fn hands_round_trip() {
        let s = "9/9/9/3k5/9/5K3/9/9/9 b RB2G2S2N2L9Prb2g2s2n2l9p 1";
        assert_eq!(Position::from_sfen(s).unwrap().to_sfen(), s);
        let s = "l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w RGgsn5p 1";
        assert_eq!(Position::from_sfen(s).unwrap().to_sfen(), s);
    }
}
