//! Japanese move notation (▲２三金打 △同玉 ▲３二角成 …), written and read.
//!
//! Written as the Japan Shogi Association's notation rules have it: destination (full-width
//! file digit, kanji rank) or 同 when it is the previous move's destination; the piece; then, only
//! when another piece of the same kind could also go there, the words that tell them apart —
//! 上 / 引 / 寄 (the motion) when that suffices, else 右 / 左 (seen from the mover's side), or 直
//! for a gold-like piece or silver moving straight ahead; 打 for a drop when a piece on the
//! board could also reach the square; 成 / 不成 when promotion was possible.
//!
//! Reading accepts what this module writes and common variants (同　玉 with a full-width space,
//! 王 for 玉, 竜 for 龍, 打 written when not needed, ASCII digits, missing ▲/△).

use super::movegen::{self, MoveList};
use super::position::Position;
use super::types::{Color, Move, PieceType, Square};
use thiserror::Error;

const FILE_DIGITS: [char; 9] = ['１', '２', '３', '４', '５', '６', '７', '８', '９'];
const RANK_KANJI: [char; 9] = ['一', '二', '三', '四', '五', '六', '七', '八', '九'];

/// The usual name of each kind, as in kifu.
pub fn piece_name(kind: PieceType) -> &'static str {
    match kind {
        PieceType::Pawn => "歩",
        PieceType::Lance => "香",
        PieceType::Knight => "桂",
        PieceType::Silver => "銀",
        PieceType::Gold => "金",
        PieceType::Bishop => "角",
        PieceType::Rook => "飛",
        PieceType::King => "玉",
        PieceType::ProPawn => "と",
        PieceType::ProLance => "成香",
        PieceType::ProKnight => "成桂",
        PieceType::ProSilver => "成銀",
        PieceType::Horse => "馬",
        PieceType::Dragon => "龍",
    }
}

/// `２三` for the square 2c.
pub fn square_name(sq: Square) -> String {
    format!(
        "{}{}",
        FILE_DIGITS[sq.file() as usize],
        RANK_KANJI[sq.rank() as usize]
    )
}

pub fn side_mark(color: Color) -> char {
    match color {
        Color::Black => '▲',
        Color::White => '△',
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Motion {
    Up,
    Down,
    Sideways,
}

fn motion(color: Color, from: Square, to: Square) -> Motion {
    let (f, t) = (from.relative_rank(color), to.relative_rank(color));
    match t.cmp(&f) {
        std::cmp::Ordering::Less => Motion::Up,
        std::cmp::Ordering::Greater => Motion::Down,
        std::cmp::Ordering::Equal => Motion::Sideways,
    }
}

/// Files counted from the mover's right hand: Black's right is file 1, White's is file 9.
fn from_right(color: Color, sq: Square) -> u8 {
    match color {
        Color::Black => sq.file(),
        Color::White => 8 - sq.file(),
    }
}

/// The words that single out the piece moving in `m` among others of its kind that could also
/// reach the destination (empty when it is the only one).
fn disambiguation(pos: &Position, m: Move, legal: &[Move]) -> String {
    let us = pos.side_to_move();
    let (from, to) = (m.from(), m.to());
    let kind = pos.piece_at(from).expect("mover").kind();
    let mut rivals: Vec<Square> = legal
        .iter()
        .filter(|o| !o.is_drop() && o.to() == to && o.from() != from)
        .filter(|o| pos.piece_at(o.from()).is_some_and(|p| p.kind() == kind))
        .map(|o| o.from())
        .collect();
    rivals.sort();
    rivals.dedup();
    if rivals.is_empty() {
        return String::new();
    }
    let own = motion(us, from, to);
    let motion_word = match own {
        Motion::Up => "上",
        Motion::Down => "引",
        Motion::Sideways => "寄",
    };
    // A gold, silver or promoted minor piece moving straight ahead is always 直.
    let gold_like = matches!(
        kind,
        PieceType::Gold
            | PieceType::Silver
            | PieceType::ProPawn
            | PieceType::ProLance
            | PieceType::ProKnight
            | PieceType::ProSilver
    );
    if gold_like && own == Motion::Up && from.file() == to.file() {
        return "直".to_string();
    }
    let same_motion: Vec<Square> = rivals
        .iter()
        .copied()
        .filter(|&r| motion(us, r, to) == own)
        .collect();
    if same_motion.is_empty() {
        return motion_word.to_string();
    }
    let mine = from_right(us, from);
    let word = if same_motion.iter().all(|&r| from_right(us, r) > mine) {
        "右"
    } else if same_motion.iter().all(|&r| from_right(us, r) < mine) {
        "左"
    } else {
        // Three abreast: the middle one is named by its motion against the outer ones.
        return motion_word.to_string();
    };
    // Left/right among pieces that move alike; add the motion when others move differently
    // and left/right alone would not single the piece out among all of them.
    let lr_alone_unique = rivals.iter().all(|&r| {
        let theirs = from_right(us, r);
        if word == "右" {
            theirs > mine
        } else {
            theirs < mine
        }
    });
    if lr_alone_unique {
        word.to_string()
    } else {
        format!("{word}{motion_word}")
    }
}

/// One move in Japanese, with the side mark: `▲２三金打`, `△同玉`, `▲３二角成`.
/// `previous` is the destination of the move before (for 同).
pub fn move_to_japanese(pos: &Position, m: Move, previous: Option<Square>) -> String {
    let mut legal = MoveList::new();
    movegen::legal(pos, &mut legal);
    move_to_japanese_with(pos, m, previous, &legal)
}

fn move_to_japanese_with(
    pos: &Position,
    m: Move,
    previous: Option<Square>,
    legal: &[Move],
) -> String {
    let us = pos.side_to_move();
    let mut s = String::new();
    s.push(side_mark(us));
    if previous == Some(m.to()) {
        s.push('同');
    } else {
        s.push_str(&square_name(m.to()));
    }
    if m.is_drop() {
        let kind = m.dropped();
        s.push_str(piece_name(kind));
        let board_piece_can_go = legal.iter().any(|o| {
            !o.is_drop()
                && o.to() == m.to()
                && pos.piece_at(o.from()).is_some_and(|p| p.kind() == kind)
        });
        if board_piece_can_go {
            s.push('打');
        }
        return s;
    }
    let kind = pos.piece_at(m.from()).expect("mover").kind();
    s.push_str(piece_name(kind));
    s.push_str(&disambiguation(pos, m, legal));
    if m.is_promotion() {
        s.push('成');
    } else if legal.contains(&Move::normal(m.from(), m.to(), true)) {
        s.push_str("不成");
    }
    s
}

/// A whole line, moves separated by single spaces: `▲２三金打 △同玉 ▲３四桂`.
pub fn line_to_japanese(root: &Position, line: &[Move]) -> String {
    line_to_japanese_after(root, line, None)
}

/// A line that continues play from `pos`, where the last move landed on `previous` (for 同).
pub fn line_to_japanese_after(pos: &Position, line: &[Move], previous: Option<Square>) -> String {
    let mut pos = pos.clone();
    let mut previous = previous;
    let mut parts = Vec::with_capacity(line.len());
    for &m in line {
        parts.push(move_to_japanese(&pos, m, previous));
        previous = Some(m.to());
        pos.do_move(m);
    }
    parts.join(" ")
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum JapaneseError {
    #[error("move {index}: '{text}' matches no legal move")]
    NoMatch { index: usize, text: String },
    #[error("move {index}: '{text}' is ambiguous ({count} legal moves match)")]
    Ambiguous {
        index: usize,
        text: String,
        count: usize,
    },
    #[error("move {index}: '{text}' uses 同 but there is no previous move")]
    NoPrevious { index: usize, text: String },
    #[error("move {index}: '{text}' is written for {written:?} but {to_move:?} is to move")]
    WrongSide {
        index: usize,
        text: String,
        written: Color,
        to_move: Color,
    },
}

/// Puts a move text into the form this module writes: full-width file digit and kanji rank
/// (`46` and `４６` become `４六`), 龍, 玉, no spaces.
fn normalize(text: &str) -> String {
    let digit = |c: char| match c {
        '1'..='9' => Some((c as u8 - b'1') as usize),
        '１'..='９' => Some((c as u32 - '１' as u32) as usize),
        _ => None,
    };
    let chars: Vec<char> = text
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '　')
        .map(|c| match c {
            '竜' => '龍',
            '王' => '玉',
            '☗' => '▲',
            '☖' => '△',
            '▽' => '△',
            other => other,
        })
        .collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        match (digit(chars[i]), chars.get(i + 1).and_then(|&c| digit(c))) {
            (Some(f), Some(r)) => {
                out.push(FILE_DIGITS[f]);
                out.push(RANK_KANJI[r]);
                i += 2;
            }
            (Some(f), None) => {
                out.push(FILE_DIGITS[f]);
                i += 1;
            }
            _ => {
                out.push(chars[i]);
                i += 1;
            }
        }
    }
    out
}

/// Reads one move written in Japanese in `pos`; `previous` is the last move's destination.
pub fn parse_japanese_move(
    pos: &Position,
    text: &str,
    previous: Option<Square>,
    index: usize,
) -> Result<Move, JapaneseError> {
    let norm = normalize(text);
    let (side, body) = match norm.chars().next() {
        Some('▲') => (Some(Color::Black), norm['▲'.len_utf8()..].to_string()),
        Some('△') => (Some(Color::White), norm['△'.len_utf8()..].to_string()),
        _ => (None, norm.clone()),
    };
    if let Some(written) = side {
        if written != pos.side_to_move() {
            return Err(JapaneseError::WrongSide {
                index,
                text: text.to_string(),
                written,
                to_move: pos.side_to_move(),
            });
        }
    }
    if body.starts_with('同') && previous.is_none() {
        return Err(JapaneseError::NoPrevious {
            index,
            text: text.to_string(),
        });
    }
    let mut legal = MoveList::new();
    movegen::legal(pos, &mut legal);
    let written: Vec<(Move, String)> = legal
        .iter()
        .map(|&m| {
            let full = move_to_japanese_with(pos, m, previous, &legal);
            (
                m,
                full[side_mark(pos.side_to_move()).len_utf8()..].to_string(),
            )
        })
        .collect();
    // Exactly as written here, or also with an unneeded 打, or with 同 spelled as the square.
    let exact: Vec<Move> = written
        .iter()
        .filter(|(m, w)| {
            *w == body
                || (m.is_drop() && format!("{w}打") == body)
                || (w.starts_with('同') && {
                    let sq = square_name(m.to());
                    body == w.replacen('同', &sq, 1)
                })
        })
        .map(|(m, _)| *m)
        .collect();
    match exact.len() {
        1 => Ok(exact[0]),
        0 => Err(JapaneseError::NoMatch {
            index,
            text: text.to_string(),
        }),
        count => Err(JapaneseError::Ambiguous {
            index,
            text: text.to_string(),
            count,
        }),
    }
}

/// Reads a line of moves separated by white space (as `line_to_japanese` writes it).
pub fn parse_japanese_line(root: &Position, text: &str) -> Result<Vec<Move>, JapaneseError> {
    let mut pos = root.clone();
    let mut previous = None;
    let mut line = Vec::new();
    // Split on ▲/△ marks when present (tolerates "同　玉" with its inner full-width space),
    // else on white space.
    let tokens: Vec<String> = if text.contains('▲') || text.contains('△') {
        let mut out = Vec::new();
        let mut cur = String::new();
        for c in text.chars() {
            if (c == '▲' || c == '△') && !cur.trim().is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            cur.push(c);
        }
        if !cur.trim().is_empty() {
            out.push(cur);
        }
        out
    } else {
        text.split_whitespace().map(String::from).collect()
    };
    for (i, token) in tokens.iter().enumerate() {
        let m = parse_japanese_move(&pos, token, previous, i + 1)?;
        previous = Some(m.to());
        pos.do_move(m);
        line.push(m);
    }
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jp(sfen: &str, usi: &str) -> String {
        let pos = Position::from_sfen(sfen).unwrap();
        let m = pos.parse_move(usi).unwrap();
        move_to_japanese(&pos, m, None)
    }

    #[test]
    fn writes_the_usual_forms() {
        let start = "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1";
        assert_eq!(jp(start, "7g7f"), "▲７六歩");
        assert_eq!(jp(start, "2h5h"), "▲５八飛");
        // Two golds can reach 5h from 6i and 4i: left and right from Black's side.
        assert_eq!(jp(start, "6i5h"), "▲５八金左");
        assert_eq!(jp(start, "4i5h"), "▲５八金右");
        // Gold straight up while another could come diagonally: 直.
        let two_golds = "4k4/9/9/9/9/9/9/9/3GG4 b - 1";
        assert_eq!(jp(two_golds, "5i5h"), "▲５八金直");
        assert_eq!(jp(two_golds, "6i5h"), "▲５八金左");
        // Motion words: one gold comes up, the other sideways.
        let up_side = "4k4/9/9/9/9/9/9/4G4/3G5 b - 1";
        let pos = Position::from_sfen(up_side).unwrap();
        let m = pos.parse_move("6i6h").unwrap();
        // Straight ahead is always 直 for a gold, even when 上 would do.
        assert_eq!(move_to_japanese(&pos, m, None), "▲６八金直");
        assert_eq!(jp(up_side, "5h6h"), "▲６八金寄");
        // Three golds: sideways 寄, diagonal 左上 (左 alone fits the 寄 one too), straight 直.
        let three = "4k4/9/9/9/3G5/3GG4/9/9/4K4 b - 1";
        assert_eq!(jp(three, "6e5e"), "▲５五金寄");
        assert_eq!(jp(three, "6f5e"), "▲５五金左上");
        assert_eq!(jp(three, "5f5e"), "▲５五金直");
        // Knights: left and right only.
        let knights = "4k4/9/9/9/9/9/9/9/2N1N1K2 b - 1";
        assert_eq!(jp(knights, "7i6g"), "▲６七桂左");
        assert_eq!(jp(knights, "5i6g"), "▲６七桂右");
        // Promotion and its refusal; a drop needs 打 only when a board piece could go too.
        let promo = "4k4/9/9/4S4/9/9/9/9/4K4 b S 1";
        assert_eq!(jp(promo, "5d5c+"), "▲５三銀成");
        assert_eq!(jp(promo, "5d5c"), "▲５三銀不成");
        assert_eq!(jp(promo, "S*5c"), "▲５三銀打");
        assert_eq!(jp(promo, "S*1a"), "▲１一銀");
        // White's view: right is the higher file.
        let white = "3g1g3/9/9/9/4k4/9/9/9/4K4 w - 1";
        assert_eq!(jp(white, "6a5b"), "△５二金右");
        assert_eq!(jp(white, "4a5b"), "△５二金左");
    }

    #[test]
    fn line_uses_dou_and_reads_back() {
        let pos = Position::from_sfen("4k4/9/4P4/9/9/9/9/9/9 b 2G 1").unwrap();
        let line: Vec<Move> = ["G*4b", "5a4b", "G*5b"]
            .iter()
            .scan(pos.clone(), |p, t| {
                let m = p.parse_move(t).unwrap();
                p.do_move(m);
                Some(m)
            })
            .collect();
        let text = line_to_japanese(&pos, &line);
        assert_eq!(text, "▲４二金 △同玉 ▲５二金");
        assert_eq!(parse_japanese_line(&pos, &text).unwrap(), line);
        assert_eq!(
            parse_japanese_line(&pos, "▲４二金打　△同　玉　▲5二金").unwrap(),
            line
        );
        assert!(matches!(
            parse_japanese_line(&pos, "▲４二金 ▲同玉"),
            Err(JapaneseError::WrongSide { index: 2, .. })
        ));
        assert!(matches!(
            parse_japanese_line(&pos, "▲９九飛"),
            Err(JapaneseError::NoMatch { index: 1, .. })
        ));
    }
}
