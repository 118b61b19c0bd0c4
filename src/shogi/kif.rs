//! BOD board diagrams (the 盤面図 of KIF files) as written by Kifu for Windows, 柿木将棋,
//! ShogiGUI and FM: reading, including KIF headers around them and the tsume convention
//! 残り全部 ("the defender holds all remaining pieces"), and writing.
//!
//! ```text
//! 後手の持駒：残り全部
//!   ９ ８ ７ ６ ５ ４ ３ ２ １
//! +---------------------------+
//! | ・ ・ ・ ・v玉 ・ ・ ・ ・|一
//! ...
//! +---------------------------+
//! 先手の持駒：金二　銀
//! 先手番
//! ```
//!
//! The position read is the diagram's; moves that follow in a KIF file are not played (for a
//! problem, the diagram is the problem).

use super::position::Position;
use super::rules::RuleSet;
use super::sfen::SfenError;
use super::types::{Color, PieceType, Square};
use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BodError {
    #[error("line {line}: expected {expected}")]
    Expected { line: usize, expected: String },
    #[error("line {line}: unknown piece '{text}'")]
    UnknownPiece { line: usize, text: String },
    #[error("line {line}: bad piece count '{text}' in hand")]
    BadCount { line: usize, text: String },
    #[error("no board found: expected a border line '+---------------------------+'")]
    NoBoard,
    #[error("both sides' hands say 残り全部 (all remaining pieces)")]
    TwoRemainders,
    #[error("KIF start position '{0}' is not supported (only 平手 or a board diagram)")]
    Handicap(String),
    #[error("the diagram is not a valid position: {0}")]
    Invalid(SfenError),
}

fn expected(line: usize, what: &str) -> BodError {
    BodError::Expected {
        line,
        expected: what.to_string(),
    }
}

/// The piece a single BOD character stands for.
fn piece_from_char(c: char) -> Option<PieceType> {
    Some(match c {
        '歩' => PieceType::Pawn,
        '香' => PieceType::Lance,
        '桂' => PieceType::Knight,
        '銀' => PieceType::Silver,
        '金' => PieceType::Gold,
        '角' => PieceType::Bishop,
        '飛' => PieceType::Rook,
        '玉' | '王' => PieceType::King,
        'と' => PieceType::ProPawn,
        '杏' => PieceType::ProLance,
        '圭' => PieceType::ProKnight,
        '全' => PieceType::ProSilver,
        '馬' => PieceType::Horse,
        '龍' | '竜' => PieceType::Dragon,
        _ => return None,
    })
}

fn bod_char(kind: PieceType) -> char {
    match kind {
        PieceType::Pawn => '歩',
        PieceType::Lance => '香',
        PieceType::Knight => '桂',
        PieceType::Silver => '銀',
        PieceType::Gold => '金',
        PieceType::Bishop => '角',
        PieceType::Rook => '飛',
        PieceType::King => '玉',
        PieceType::ProPawn => 'と',
        PieceType::ProLance => '杏',
        PieceType::ProKnight => '圭',
        PieceType::ProSilver => '全',
        PieceType::Horse => '馬',
        PieceType::Dragon => '龍',
    }
}

const KANJI_DIGITS: [char; 10] = ['〇', '一', '二', '三', '四', '五', '六', '七', '八', '九'];

/// 一 .. 十八 (and ASCII or full-width digits).
fn parse_count(text: &str) -> Option<u8> {
    if text.is_empty() {
        return Some(1);
    }
    let ascii: String = text
        .chars()
        .map(|c| match c {
            '０'..='９' => char::from_u32(c as u32 - '０' as u32 + '0' as u32).unwrap_or(c),
            other => other,
        })
        .collect();
    if let Ok(n) = ascii.parse::<u8>() {
        return Some(n);
    }
    let digit = |c: char| KANJI_DIGITS.iter().position(|&k| k == c).map(|d| d as u8);
    let chars: Vec<char> = text.chars().collect();
    match chars.as_slice() {
        ['十'] => Some(10),
        ['十', d] => Some(10 + digit(*d)?),
        [d, '十'] => Some(10 * digit(*d)?),
        [d, '十', e] => Some(10 * digit(*d)? + digit(*e)?),
        [d] => digit(*d),
        _ => None,
    }
}

fn count_kanji(n: u8) -> String {
    match n {
        0 | 1 => String::new(),
        2..=9 => KANJI_DIGITS[n as usize].to_string(),
        10 => "十".to_string(),
        _ => format!("十{}", KANJI_DIGITS[(n - 10) as usize]),
    }
}

enum HandSpec {
    Counts([u8; PieceType::NUM]),
    /// 残り全部: every piece not on the board and not in the other hand.
    Rest,
}

fn parse_hand(text: &str, line: usize) -> Result<HandSpec, BodError> {
    // FM prints the final position's diagram beside the problem's: keep the first hand only.
    let text = match text.find("持駒") {
        Some(i) => &text[..i],
        None => text,
    };
    let text = text.trim_matches(|c: char| c.is_whitespace() || c == '　');
    let mut counts = [0u8; PieceType::NUM];
    if text.is_empty() || text == "なし" {
        return Ok(HandSpec::Counts(counts));
    }
    if text.starts_with("残り") {
        return Ok(HandSpec::Rest);
    }
    for token in text.split(|c: char| c.is_whitespace() || c == '　' || c == '、') {
        if token.is_empty() || token == "なし" {
            continue;
        }
        let mut chars = token.chars();
        let c = chars.next().unwrap_or(' ');
        let kind = piece_from_char(c)
            .filter(|k| PieceType::HAND.contains(k))
            .ok_or_else(|| BodError::UnknownPiece {
                line,
                text: token.to_string(),
            })?;
        let rest: String = chars.collect();
        let n = parse_count(&rest).ok_or_else(|| BodError::BadCount {
            line,
            text: token.to_string(),
        })?;
        counts[kind.index()] = counts[kind.index()].saturating_add(n);
    }
    Ok(HandSpec::Counts(counts))
}

/// Reads the 9 cells of one rank (`| ・ ・v玉 ...|一`), files 9 to 1.
fn parse_rank(text: &str, line: usize) -> Result<[Option<(Color, PieceType)>; 9], BodError> {
    let inner = text
        .strip_prefix('|')
        .ok_or_else(|| expected(line, "a board rank starting with '|'"))?;
    let end = inner
        .find('|')
        .ok_or_else(|| expected(line, "a board rank ending with '|'"))?;
    let cells: Vec<char> = inner[..end].chars().collect();
    let mut out = [None; 9];
    let mut i = 0;
    let mut file = 0;
    while i < cells.len() {
        let (prefix, c) = match cells[i] {
            ' ' | '　' if i + 1 < cells.len() => (' ', cells[i + 1]),
            'v' | 'V' if i + 1 < cells.len() => ('v', cells[i + 1]),
            '^' if i + 1 < cells.len() => (' ', cells[i + 1]),
            c => (' ', c), // a cell without its prefix column
        };
        i += if matches!(cells[i], ' ' | '　' | 'v' | 'V' | '^') {
            2
        } else {
            1
        };
        if file >= 9 {
            return Err(expected(line, "9 squares in the rank"));
        }
        if c != '・' {
            let kind = piece_from_char(c).ok_or_else(|| BodError::UnknownPiece {
                line,
                text: c.to_string(),
            })?;
            let color = if prefix == 'v' {
                Color::White
            } else {
                Color::Black
            };
            out[file] = Some((color, kind));
        }
        file += 1;
    }
    if file != 9 {
        return Err(expected(line, "9 squares in the rank"));
    }
    Ok(out)
}

/// Reads a position from a BOD diagram or a KIF file (headers, diagram, moves ignored).
pub fn parse_bod(text: &str) -> Result<Position, BodError> {
    parse_bod_under(text, RuleSet::PLAIN)
}

/// [`parse_bod`], the position validated under `rules` (where pieces may stand and what is
/// check depend on the piece powers).
pub fn parse_bod_under(text: &str, rules: RuleSet) -> Result<Position, BodError> {
    let lines: Vec<&str> = text.lines().map(|l| l.trim_end_matches('\r')).collect();
    let border = |l: &str| l.trim_start().starts_with("+--");
    let Some(top) = lines.iter().position(|l| border(l)) else {
        // A KIF without a diagram starts from its 手合割.
        if let Some(h) = lines.iter().find_map(|l| l.strip_prefix("手合割：")) {
            let h = h.trim();
            return if h == "平手" {
                Ok(Position::startpos())
            } else {
                Err(BodError::Handicap(h.to_string()))
            };
        }
        return Err(BodError::NoBoard);
    };
    let mut board = [[None; 9]; 9];
    for (rank, row) in board.iter_mut().enumerate() {
        let n = top + 1 + rank;
        let text = lines
            .get(n)
            .ok_or_else(|| expected(n + 1, "a board rank"))?
            .trim_start();
        *row = parse_rank(text, n + 1)?;
    }
    let bottom = top + 10;
    if !lines.get(bottom).is_some_and(|l| border(l)) {
        return Err(expected(
            bottom + 1,
            "the board's bottom border '+---------------------------+'",
        ));
    }
    let mut hands: [Option<HandSpec>; 2] = [None, None];
    let mut side = Color::Black;
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim();
        let hand_of = |prefixes: &[&str]| {
            prefixes
                .iter()
                .find_map(|p| t.strip_prefix(p))
                .map(|rest| rest.trim_start_matches(['：', ':']))
        };
        if let Some(rest) = hand_of(&["先手の持駒", "下手の持駒", "先手持駒"]) {
            hands[0] = Some(parse_hand(rest, i + 1)?);
        } else if let Some(rest) = hand_of(&["後手の持駒", "上手の持駒", "後手持駒"])
        {
            hands[1] = Some(parse_hand(rest, i + 1)?);
        } else if let Some(rest) = hand_of(&["持駒", "持ち駒"]) {
            // FM's single hand line: the attacker's; the defender holds all the rest.
            hands[0] = Some(parse_hand(rest, i + 1)?);
            if hands[1].is_none() {
                hands[1] = Some(HandSpec::Rest);
            }
        } else if t.starts_with("後手番") || t.starts_with("上手番") {
            side = Color::White;
        } else if t.starts_with("先手番") || t.starts_with("下手番") {
            side = Color::Black;
        }
    }
    let mut counts: [[u8; PieceType::NUM]; 2] = [[0; PieceType::NUM]; 2];
    let mut rest_side = None;
    for (c, h) in hands.iter().enumerate() {
        match h {
            Some(HandSpec::Counts(n)) => counts[c] = *n,
            Some(HandSpec::Rest) if rest_side.is_some() => return Err(BodError::TwoRemainders),
            Some(HandSpec::Rest) => rest_side = Some(c),
            None => {}
        }
    }
    if let Some(c) = rest_side {
        let mut used = [0u8; PieceType::NUM];
        for row in &board {
            for (_, kind) in row.iter().flatten() {
                used[kind.unpromoted().index()] += 1;
            }
        }
        for kind in PieceType::HAND {
            let k = kind.index();
            let taken = used[k] + counts[1 - c][k];
            counts[c][k] = kind.set_count().saturating_sub(taken);
        }
    }
    // Through SFEN, so that a diagram is checked exactly like any other input.
    let mut sfen = String::new();
    for (rank, row) in board.iter().enumerate() {
        if rank > 0 {
            sfen.push('/');
        }
        let mut empty = 0;
        for cell in row {
            match cell {
                None => empty += 1,
                Some((color, kind)) => {
                    if empty > 0 {
                        sfen.push_str(&empty.to_string());
                        empty = 0;
                    }
                    sfen.push_str(&super::types::Piece::new(*color, *kind).sfen());
                }
            }
        }
        if empty > 0 {
            sfen.push_str(&empty.to_string());
        }
    }
    sfen.push_str(if side == Color::Black { " b " } else { " w " });
    let mut hand = String::new();
    for (c, n) in counts.iter().enumerate() {
        for kind in PieceType::HAND_PRINT_ORDER {
            let k = n[kind.index()];
            if k > 1 {
                hand.push_str(&k.to_string());
            }
            if k > 0 {
                let ch = kind.sfen_char();
                hand.push(if c == 0 { ch } else { ch.to_ascii_lowercase() });
            }
        }
    }
    sfen.push_str(if hand.is_empty() { "-" } else { &hand });
    sfen.push_str(" 1");
    Position::from_sfen_under(&sfen, rules).map_err(BodError::Invalid)
}

/// The position as a BOD diagram in Kifu for Windows layout.
pub fn to_bod(pos: &Position) -> String {
    let hand_text = |color: Color| {
        let hand = pos.hand(color);
        let parts: Vec<String> = PieceType::HAND_PRINT_ORDER
            .iter()
            .filter(|&&k| hand.count(k) > 0)
            .map(|&k| format!("{}{}", bod_char(k), count_kanji(hand.count(k))))
            .collect();
        if parts.is_empty() {
            "なし".to_string()
        } else {
            parts.join("　") + "　"
        }
    };
    let mut s = String::new();
    s.push_str(&format!("後手の持駒：{}\n", hand_text(Color::White)));
    s.push_str("  ９ ８ ７ ６ ５ ４ ３ ２ １\n");
    s.push_str("+---------------------------+\n");
    for rank in 0..9u8 {
        s.push('|');
        for file in (0..9u8).rev() {
            match pos.piece_at(Square::new(file, rank)) {
                None => s.push_str(" ・"),
                Some(p) => {
                    s.push(if p.color() == Color::White { 'v' } else { ' ' });
                    s.push(bod_char(p.kind()));
                }
            }
        }
        s.push('|');
        s.push(KANJI_DIGITS[rank as usize + 1]);
        s.push('\n');
    }
    s.push_str("+---------------------------+\n");
    s.push_str(&format!("先手の持駒：{}\n", hand_text(Color::Black)));
    s.push_str(match pos.side_to_move() {
        Color::Black => "先手番\n",
        Color::White => "後手番\n",
    });
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_in_kanji() {
        assert_eq!(parse_count(""), Some(1));
        assert_eq!(parse_count("二"), Some(2));
        assert_eq!(parse_count("十"), Some(10));
        assert_eq!(parse_count("十七"), Some(17));
        assert_eq!(parse_count("18"), Some(18));
        assert_eq!(parse_count("１６"), Some(16));
        assert_eq!(parse_count("x"), None);
        for n in 1..=18 {
            assert_eq!(parse_count(&count_kanji(n)), Some(n));
        }
    }
}
