//! Japanese move notation (▲２三金打 △同玉 ▲３二角成 …), written and read.
//!
//! Written as the Japan Shogi Association's notation rules have it: destination (full-width
//! file digit, kanji rank) or 同 when it is the previous move's destination; the piece; then, only
//! when another piece of the same kind could also go there, the words that tell them apart — the
//! motion 上 / 引 / 寄 when that suffices; else the position 左 / 右 (seen from the mover's side),
//! or 直 for a gold-like piece or silver moving straight ahead (never for 龍 / 馬); else both
//! (５五金左上); 打 for a drop when a piece on the board could also reach the square; 成 / 不成
//! when promotion was possible. 成 / 不成 / 打 never pick the piece.
//!
//! Reading takes the words for what they say: it accepts what this module writes and common
//! variants (同　玉 with a full-width space, 王 for 玉, 竜 for 龍, 全 / 圭 / 杏, 打 or a motion
//! written when not needed, 直 where the motion would do, ASCII digits, missing ▲/△), and
//! reports a text that fits several moves as ambiguous.
//!
//! Under a capture rule (キルケ, アンチキルケ, PWC) a capture that puts a piece back on the board
//! ends with `/`, that piece's square and its name as it now stands (`▲５二金/３一銀`: Fairy
//! Mate's convention); read back, the suffix picks the file-5 choice.

use super::capture_rule;
use super::conditions::CaptureRule;
use super::movegen::MoveList;
use super::position::Position;
use super::rules::RuleSet;
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

/// 上 / 引 / 寄: where the piece goes, seen from the mover.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Motion {
    Up,
    Down,
    Sideways,
}

impl Motion {
    fn word(self) -> char {
        match self {
            Motion::Up => '上',
            Motion::Down => '引',
            Motion::Sideways => '寄',
        }
    }
}

/// 左 / 右 / 直: where the piece stood, seen from the mover.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Side {
    Left,
    Right,
    Straight,
}

impl Side {
    fn word(self) -> char {
        match self {
            Side::Left => '左',
            Side::Right => '右',
            Side::Straight => '直',
        }
    }
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

/// Kinds that move straight ahead as 直 (gold, silver and the promoted minor pieces).
fn uses_straight(kind: PieceType) -> bool {
    matches!(
        kind,
        PieceType::Gold
            | PieceType::Silver
            | PieceType::ProPawn
            | PieceType::ProLance
            | PieceType::ProKnight
            | PieceType::ProSilver
    )
}

/// One piece of the moving kind that can reach the destination, with the words that fit it.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    from: Square,
    motion: Motion,
    side: Option<Side>,
}

impl Candidate {
    /// Whether the written words (either may be absent) fit this piece.
    fn fits(&self, motion: Option<Motion>, side: Option<Side>) -> bool {
        motion.is_none_or(|m| m == self.motion) && side.is_none_or(|s| Some(s) == self.side)
    }
}

/// Every piece of `kind` on the board that has a legal move to `to` (promoting or not).
///
/// 左 / 右 are told from the destination for most pieces (a gold on ６三 going to ５二 is 左);
/// a dragon or horse has no 直 and is 左 or 右 of the other one (a dragon on ２二 going to ２四
/// is 左 of one on １三).
fn candidates(pos: &Position, kind: PieceType, to: Square, legal: &[Move]) -> Vec<Candidate> {
    let us = pos.side_to_move();
    let mut from: Vec<Square> = legal
        .iter()
        .filter(|o| !o.is_drop() && o.to() == to)
        .filter(|o| pos.piece_at(o.from()).is_some_and(|p| p.kind() == kind))
        .map(|o| o.from())
        .collect();
    from.sort();
    from.dedup();
    let relative_to_each_other = matches!(kind, PieceType::Dragon | PieceType::Horse);
    from.iter()
        .map(|&sq| {
            let motion = motion(us, sq, to);
            let mine = from_right(us, sq);
            let side = if relative_to_each_other {
                let others = || {
                    from.iter()
                        .filter(|&&o| o != sq)
                        .map(|&o| from_right(us, o))
                };
                if others().all(|o| o < mine) {
                    Some(Side::Left)
                } else if others().all(|o| o > mine) {
                    Some(Side::Right)
                } else {
                    None
                }
            } else if uses_straight(kind) && motion == Motion::Up && sq.file() == to.file() {
                Some(Side::Straight)
            } else {
                match mine.cmp(&from_right(us, to)) {
                    std::cmp::Ordering::Greater => Some(Side::Left),
                    std::cmp::Ordering::Less => Some(Side::Right),
                    std::cmp::Ordering::Equal => None,
                }
            };
            Candidate {
                from: sq,
                motion,
                side,
            }
        })
        .collect()
}

/// The words that single out the piece moving in `m` among others of its kind that could also
/// reach the destination (empty when it is the only one). The JSA order: the motion (上 引 寄)
/// when it suffices, else the position (左 右 直), else both (５五金左上); promotion and 打 never
/// pick the piece.
fn disambiguation(pos: &Position, m: Move, legal: &[Move]) -> String {
    let kind = pos.piece_at(m.from()).expect("mover").kind();
    let cands = candidates(pos, kind, m.to(), legal);
    if cands.len() <= 1 {
        return String::new();
    }
    let me = *cands.iter().find(|c| c.from == m.from()).expect("mover");
    let unique = |motion: Option<Motion>, side: Option<Side>| {
        cands.iter().filter(|c| c.fits(motion, side)).count() == 1
    };
    let motion_only = (Some(me.motion), None);
    let side_only = (None, me.side);
    let both = (Some(me.motion), me.side);
    let (motion, side) = [motion_only, side_only, both]
        .into_iter()
        .find(|&(motion, side)| (motion.is_some() || side.is_some()) && unique(motion, side))
        .unwrap_or(both);
    side.map(Side::word)
        .into_iter()
        .chain(motion.map(Motion::word))
        .collect()
}

/// One move in Japanese, with the side mark: `▲２三金打`, `△同玉`, `▲３二角成`.
/// `previous` is the destination of the move before (for 同).
pub fn move_to_japanese(pos: &Position, m: Move, previous: Option<Square>) -> String {
    move_to_japanese_under(pos, m, previous, RuleSet::PLAIN)
}

/// [`move_to_japanese`] under `rules`: which other pieces could go to the same square (右, 左,
/// 上, ...) and whether 不成 needs saying depend on the piece powers.
pub fn move_to_japanese_under(
    pos: &Position,
    m: Move,
    previous: Option<Square>,
    rules: RuleSet,
) -> String {
    let mut legal = MoveList::new();
    rules.without_captures_rule().legal(pos, &mut legal);
    let mut text = move_to_japanese_with(pos, m, previous, &legal);
    text.push_str(&capture_suffix(pos, m, rules));
    text
}

/// The piece a capture puts back on the board under `rules`, as `/３一銀`; empty when there is
/// none (no capture rule, not a capture, the piece went to hand, the capturer stayed).
pub fn capture_suffix(pos: &Position, m: Move, rules: RuleSet) -> String {
    if rules.conditions().capture_rule == CaptureRule::Normal
        || m.is_drop()
        || pos.piece_at(m.to()).is_none()
    {
        return String::new();
    }
    let after = capture_rule::aftermath(pos, rules.capture_setting(), m);
    let (square, kind) = match after.victim_to {
        Some((square, piece)) => (square, piece.kind()),
        None if after.capturer_to != m.to() => {
            let kind = pos.piece_at(m.from()).expect("a piece to move").kind();
            let kind = if m.is_promotion() {
                kind.promoted()
            } else {
                kind
            };
            (after.capturer_to, kind)
        }
        None => return String::new(),
    };
    format!("/{}{}", square_name(square), piece_name(kind))
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
    line_to_japanese_after(root, line, None, RuleSet::PLAIN)
}

/// A line that continues play from `pos` under `rules`, where the last move landed on
/// `previous` (for 同).
pub fn line_to_japanese_after(
    pos: &Position,
    line: &[Move],
    previous: Option<Square>,
    rules: RuleSet,
) -> String {
    let mut pos = pos.clone();
    rules.adopt(&mut pos);
    let mut previous = previous;
    let mut parts = Vec::with_capacity(line.len());
    for &m in line {
        parts.push(move_to_japanese_under(&pos, m, previous, rules));
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

/// A move text taken apart: `４六金左上成` or `同玉` (after normalising).
#[derive(Debug, PartialEq, Eq)]
struct MoveText {
    /// None for 同.
    to: Option<Square>,
    kind: PieceType,
    motion: Option<Motion>,
    side: Option<Side>,
    promote: Option<bool>,
    drop: bool,
}

/// Names a reader meets, the two-character ones first so 成香 is not read as 成 + 香.
const PIECE_NAMES: [(&str, PieceType); 17] = [
    ("成香", PieceType::ProLance),
    ("成桂", PieceType::ProKnight),
    ("成銀", PieceType::ProSilver),
    ("歩", PieceType::Pawn),
    ("香", PieceType::Lance),
    ("桂", PieceType::Knight),
    ("銀", PieceType::Silver),
    ("金", PieceType::Gold),
    ("角", PieceType::Bishop),
    ("飛", PieceType::Rook),
    ("玉", PieceType::King),
    ("と", PieceType::ProPawn),
    ("杏", PieceType::ProLance),
    ("圭", PieceType::ProKnight),
    ("全", PieceType::ProSilver),
    ("馬", PieceType::Horse),
    ("龍", PieceType::Dragon),
];

/// Splits a normalised move body (no side mark) into its parts; None when it is not a move.
fn split_move_text(body: &str) -> Option<MoveText> {
    let mut rest = body;
    let mut to = None;
    let mut chars = rest.chars();
    if let (Some(f), Some(r)) = (chars.next(), chars.next()) {
        let file = FILE_DIGITS.iter().position(|&c| c == f);
        let rank = RANK_KANJI.iter().position(|&c| c == r);
        if let (Some(file), Some(rank)) = (file, rank) {
            to = Some(Square::new(file as u8, rank as u8));
            rest = chars.as_str();
        }
    }
    // 同 alone, or after the square it stands for (４六同金).
    if let Some(after) = rest.strip_prefix('同') {
        rest = after;
    } else if to.is_none() {
        return None;
    }
    let (name, kind) = PIECE_NAMES.iter().find(|(n, _)| rest.starts_with(n))?;
    rest = &rest[name.len()..];
    let mut text = MoveText {
        to,
        kind: *kind,
        motion: None,
        side: None,
        promote: None,
        drop: false,
    };
    loop {
        let mut chars = rest.chars();
        let Some(c) = chars.next() else { break };
        match c {
            '上' | '行' | '入' if text.motion.is_none() => text.motion = Some(Motion::Up),
            '引' if text.motion.is_none() => text.motion = Some(Motion::Down),
            '寄' if text.motion.is_none() => text.motion = Some(Motion::Sideways),
            '左' if text.side.is_none() => text.side = Some(Side::Left),
            '右' if text.side.is_none() => text.side = Some(Side::Right),
            '直' if text.side.is_none() => text.side = Some(Side::Straight),
            '打' if !text.drop => text.drop = true,
            '成' if text.promote.is_none() => text.promote = Some(true),
            '不' | '生' if text.promote.is_none() => {
                text.promote = Some(false);
                if c == '不' {
                    chars.next().filter(|&n| n == '成')?;
                }
            }
            _ => return None,
        }
        rest = chars.as_str();
    }
    Some(text)
}

/// Reads one move written in Japanese in `pos`; `previous` is the last move's destination.
///
/// The words are read for what they say, so a text that names the piece unambiguously is
/// accepted even where the writer would put it otherwise (`４六金直` for `４六金上`, an unneeded
/// 打 or 上, 不成 left out).
pub fn parse_japanese_move(
    pos: &Position,
    text: &str,
    previous: Option<Square>,
    index: usize,
) -> Result<Move, JapaneseError> {
    parse_japanese_move_under(pos, text, previous, index, RuleSet::PLAIN)
}

/// [`parse_japanese_move`] under `rules`: a capture's suffix (`/３一銀`) picks its file-5 choice;
/// without one, the choice on the file-1 side is taken when both fit.
pub fn parse_japanese_move_under(
    pos: &Position,
    text: &str,
    previous: Option<Square>,
    index: usize,
    rules: RuleSet,
) -> Result<Move, JapaneseError> {
    let no_match = || JapaneseError::NoMatch {
        index,
        text: text.to_string(),
    };
    let (text_body, suffix) = match text.split_once('/') {
        Some((body, suffix)) => (body, Some(normalize(suffix))),
        None => (text, None),
    };
    let norm = normalize(text_body);
    let (side, body) = match norm.chars().next() {
        Some('▲') => (Some(Color::Black), &norm['▲'.len_utf8()..]),
        Some('△') => (Some(Color::White), &norm['△'.len_utf8()..]),
        _ => (None, norm.as_str()),
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
    let parts = split_move_text(body).ok_or_else(no_match)?;
    let to = match (parts.to, previous) {
        (Some(to), _) => to,
        (None, Some(previous)) => previous,
        (None, None) => {
            return Err(JapaneseError::NoPrevious {
                index,
                text: text.to_string(),
            })
        }
    };
    let mut legal = MoveList::new();
    rules.without_captures_rule().legal(pos, &mut legal);
    let cands = candidates(pos, parts.kind, to, &legal);
    // A drop is written with 打 whenever a board piece of its kind could go there too.
    let matching: Vec<Move> = if parts.drop || cands.is_empty() {
        if parts.motion.is_some() || parts.side.is_some() || parts.promote.is_some() {
            return Err(no_match());
        }
        legal
            .iter()
            .copied()
            .filter(|m| m.is_drop() && m.to() == to && m.dropped() == parts.kind)
            .collect()
    } else {
        let fitting: Vec<Square> = cands
            .iter()
            .filter(|c| c.fits(parts.motion, parts.side))
            .map(|c| c.from)
            .collect();
        // The words must pick the piece on their own; 成 / 不成 only say how it moves.
        if fitting.len() > 1 {
            return Err(JapaneseError::Ambiguous {
                index,
                text: text.to_string(),
                count: fitting.len(),
            });
        }
        let promote = parts.promote.unwrap_or(false);
        legal
            .iter()
            .copied()
            .filter(|m| !m.is_drop() && m.to() == to && fitting.contains(&m.from()))
            .filter(|m| m.is_promotion() == promote)
            .collect()
    };
    // The suffix names the file-5 choice; without one the file-1 side's is meant.
    let matching: Vec<Move> = match &suffix {
        Some(suffix) => matching
            .into_iter()
            .filter(|&m| capture_suffix(pos, m, rules).strip_prefix('/') == Some(suffix))
            .collect(),
        None if matching.len() == 2 && matching[0].plain() == matching[1].plain() => matching
            .into_iter()
            .filter(|m| !m.chooses_far_home())
            .collect(),
        None => matching,
    };
    match matching.len() {
        1 => Ok(matching[0]),
        0 => Err(no_match()),
        count => Err(JapaneseError::Ambiguous {
            index,
            text: text.to_string(),
            count,
        }),
    }
}

/// Reads a line of moves separated by white space (as `line_to_japanese` writes it).
pub fn parse_japanese_line(root: &Position, text: &str) -> Result<Vec<Move>, JapaneseError> {
    parse_japanese_line_under(root, text, RuleSet::PLAIN)
}

/// [`parse_japanese_line`] under `rules`.
pub fn parse_japanese_line_under(
    root: &Position,
    text: &str,
    rules: RuleSet,
) -> Result<Vec<Move>, JapaneseError> {
    let mut pos = root.clone();
    rules.adopt(&mut pos);
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
        let m = parse_japanese_move_under(&pos, token, previous, i + 1, rules)?;
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
        // The motion tells them apart, so 上 (not 直) for the one going straight ahead.
        assert_eq!(move_to_japanese(&pos, m, None), "▲６八金上");
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
