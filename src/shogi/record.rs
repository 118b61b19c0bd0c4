//! Game records of a solution, in the three formats shogi GUIs read: KIF and KI2 (Kakinoki's
//! formats) and CSA. Written for `kyozume solve --output`, and read back (position and moves)
//! so that what is written can be checked.
//!
//! * KIF: a header (開始日時, then 手合割：平手 for the initial position, else a BOD diagram with
//!   both hands), `手数----指手---------消費時間--`, one move a line with its number, written the
//!   way Kakinoki defines it — every drop with 打, every board move with its origin
//!   (`７六歩(77)`), `同　` for a recapture, 成 / 不成 where promotion was possible — and the
//!   trailer `まで13手で詰み`.
//! * KI2: the same header, then the moves in Japanese notation (打 and 上・寄・引・左・右・直 only
//!   where needed, see [`super::japanese`]), and the trailer.
//! * CSA (V2.2): the position as `P1`..`P9`, `P+` / `P-` hands and the side to move, then one
//!   move a line (`+0023KI`, `-1323OU`: origin, destination, the piece after the move), and
//!   `%TSUMI`.

use super::capture_rule::{self, CaptureSetting};
use super::conditions::CaptureRule;
use super::japanese::{self, piece_name};
use super::kif::{parse_bod_under, to_bod, BodError};
use super::position::Position;
use super::rules::RuleSet;
use super::stipulation::Stipulation;
use super::types::{Color, Move, Piece, PieceType, Square};
use thiserror::Error;

const FILE_DIGITS: [char; 9] = ['１', '２', '３', '４', '５', '６', '７', '８', '９'];
const RANK_KANJI: [char; 9] = ['一', '二', '三', '四', '五', '六', '七', '八', '九'];
const MOVES_HEADER: &str = "手数----指手---------消費時間--";

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RecordError {
    #[error("{0}")]
    Position(#[from] BodError),
    #[error("move {index}: cannot read '{text}'")]
    BadMove { index: usize, text: String },
    #[error("move {index}: '{text}' is not legal here")]
    Illegal { index: usize, text: String },
    #[error("{0}")]
    Japanese(#[from] japanese::JapaneseError),
    #[error("line {line}: {what}")]
    Csa { line: usize, what: String },
}

/// How a solution line ends, for the trailer.
fn trailer(plies: usize) -> String {
    format!("まで{plies}手で詰み\n")
}

fn is_initial(pos: &Position) -> bool {
    Position::startpos().key() == pos.key()
}

/// The header both Kakinoki formats share: start time, the stipulation, and the handicap or the
/// diagram.
fn kakinoki_header(root: &Position, stipulation: Stipulation, started: &str) -> String {
    let mut s = format!("# ---- kyozume {} ----\n", env!("CARGO_PKG_VERSION"));
    s.push_str(&format!("開始日時：{started}\n"));
    s.push_str(&format!("作品形式：{}\n", stipulation.japanese()));
    if is_initial(root) {
        s.push_str("手合割：平手\n");
    } else {
        s.push_str(&to_bod(root));
    }
    s.push_str("先手：\n後手：\n");
    s
}

/// A move as KIF writes it: `７六歩(77)`, `同　歩(76)`, `２三金打`, `３二角成(77)`.
fn kif_move(pos: &Position, m: Move, previous: Option<Square>, rules: RuleSet) -> String {
    let mut s = String::new();
    if previous == Some(m.to()) {
        s.push_str("同　");
    } else {
        s.push(FILE_DIGITS[m.to().file() as usize]);
        s.push(RANK_KANJI[m.to().rank() as usize]);
    }
    if m.is_drop() {
        s.push_str(piece_name(m.dropped()));
        s.push('打');
        return s;
    }
    let kind = pos.piece_at(m.from()).expect("a piece to move").kind();
    s.push_str(piece_name(kind));
    if m.is_promotion() {
        s.push('成');
    } else if rules.is_legal_move(pos, Move::normal(m.from(), m.to(), true)) {
        s.push_str("不成");
    }
    s.push_str(&format!("({}{})", m.from().file() + 1, m.from().rank() + 1));
    s.push_str(&japanese::capture_suffix(pos, m, rules));
    s
}

/// The solution `line` of a `stipulation` problem from `root` as a KIF file; `started` is the
/// 開始日時 text.
pub fn to_kif(root: &Position, stipulation: Stipulation, line: &[Move], started: &str) -> String {
    let mut s = kakinoki_header(root, stipulation, started);
    s.push_str(MOVES_HEADER);
    s.push('\n');
    let mut pos = root.clone();
    stipulation.rules().adopt(&mut pos);
    let mut previous = None;
    for (i, &m) in line.iter().enumerate() {
        let text = kif_move(&pos, m, previous, stipulation.rules());
        // Kakinoki pads the move to a fixed width (counted in half-width columns).
        let width: usize = text.chars().map(|c| if c.is_ascii() { 1 } else { 2 }).sum();
        let pad = " ".repeat(14usize.saturating_sub(width));
        s.push_str(&format!("{:>4} {text}{pad}( 0:00/00:00:00)\n", i + 1));
        previous = Some(m.to());
        pos.do_move(m);
    }
    s.push_str(&trailer(line.len()));
    s
}

/// The solution `line` of a `stipulation` problem from `root` as a KI2 file.
pub fn to_ki2(root: &Position, stipulation: Stipulation, line: &[Move], started: &str) -> String {
    let mut s = kakinoki_header(root, stipulation, started);
    let text = japanese::line_to_japanese_after(root, line, None, stipulation.rules());
    // Six moves a line, as Kakinoki writes KI2.
    let words: Vec<&str> = text.split(' ').collect();
    for chunk in words.chunks(6) {
        s.push_str(&chunk.join(" "));
        s.push('\n');
    }
    s.push_str(&trailer(line.len()));
    s
}

/// The position of a KIF or KI2 file: 手合割：平手 without a diagram is the initial position.
fn kakinoki_position(text: &str, rules: RuleSet) -> Result<Position, RecordError> {
    let has_diagram = text
        .lines()
        .any(|l| l.starts_with('|') || l.starts_with("+---"));
    if !has_diagram && text.lines().any(|l| l.trim() == "手合割：平手") {
        return Ok(Position::startpos());
    }
    Ok(parse_bod_under(text, rules)?)
}

/// The rules a KIF or KI2 file names in its `作品形式` line (normal shogi without one, or with
/// one that names no rules kyozume knows).
fn kakinoki_rules(text: &str) -> RuleSet {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("作品形式："))
        .and_then(|rules| Stipulation::parse_rules(rules.trim()).ok())
        .map_or(RuleSet::PLAIN, |s| s.rules())
}

/// Reads a KIF file: its position and its moves (played and checked for legality), under the
/// rules its `作品形式` names; a capture's suffix (`/４一金`) picks its file-5 choice.
pub fn read_kif(text: &str) -> Result<(Position, Vec<Move>), RecordError> {
    let rules = kakinoki_rules(text);
    let mut root = kakinoki_position(text, rules)?;
    rules.adopt(&mut root);
    let mut pos = root.clone();
    let mut moves = Vec::new();
    let mut previous: Option<Square> = None;
    let body = text
        .lines()
        .skip_while(|l| !l.starts_with("手数"))
        .skip(1)
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('*') && !l.starts_with('#'));
    for line in body {
        if line.starts_with("まで") {
            break;
        }
        let index = moves.len() + 1;
        let bad = || RecordError::BadMove {
            index,
            text: line.to_string(),
        };
        // "<number> <move> [(time)]"
        let mut fields = line.split_whitespace();
        let number = fields.next().ok_or_else(bad)?;
        if number.parse::<usize>().ok() != Some(index) {
            return Err(bad());
        }
        // The move may hold a full-width space (同　歩); times come in parentheses.
        let rest = line[number.len()..].trim_start();
        let text = rest.split("( ").next().unwrap_or(rest).trim_end();
        let (move_text, suffix) = match text.split_once('/') {
            Some((m, suffix)) => (m, Some(suffix)),
            None => (text, None),
        };
        let m = parse_kif_move(&pos, move_text, previous).ok_or_else(bad)?;
        // The suffix names the file-5 choice; without one the file-1 side's is meant.
        let m = match suffix {
            Some(suffix) => [m, m.choosing_far_home()]
                .into_iter()
                .find(|&c| {
                    japanese::capture_suffix(&pos, c, rules).strip_prefix('/') == Some(suffix)
                })
                .ok_or_else(bad)?,
            None => m,
        };
        if !rules.is_legal_move(&pos, m) {
            return Err(RecordError::Illegal {
                index,
                text: text.to_string(),
            });
        }
        previous = Some(m.to());
        pos.do_move(m);
        moves.push(m);
    }
    Ok((root, moves))
}

/// One KIF move (`７六歩(77)`, `同　歩(76)`, `２三金打`) in `pos`.
fn parse_kif_move(pos: &Position, text: &str, previous: Option<Square>) -> Option<Move> {
    let text = text.replace('　', "");
    let mut chars = text.chars().peekable();
    let to = if chars.peek() == Some(&'同') {
        chars.next();
        previous?
    } else {
        let (f, r) = (chars.next()?, chars.next()?);
        let file = FILE_DIGITS.iter().position(|&c| c == f)?;
        let rank = RANK_KANJI.iter().position(|&c| c == r)?;
        Square::new(file as u8, rank as u8)
    };
    let rest: String = chars.collect();
    let (name_len, kind) = [
        ("成香", PieceType::ProLance),
        ("成桂", PieceType::ProKnight),
        ("成銀", PieceType::ProSilver),
    ]
    .into_iter()
    .chain(PieceType::ALL.iter().map(|&k| (piece_name(k), k)))
    .chain([("竜", PieceType::Dragon), ("王", PieceType::King)])
    .find(|(name, _)| rest.starts_with(name))
    .map(|(name, kind)| (name.len(), kind))?;
    let rest = &rest[name_len..];
    if let Some(after) = rest.strip_prefix('打') {
        return after.is_empty().then(|| Move::drop(kind, to));
    }
    let (promote, rest) = if let Some(r) = rest.strip_prefix("不成") {
        (false, r)
    } else if let Some(r) = rest.strip_prefix('成') {
        (true, r)
    } else {
        (false, rest)
    };
    let origin = rest.strip_prefix('(')?.strip_suffix(')')?.as_bytes();
    if origin.len() != 2 || !origin.iter().all(|b| (b'1'..=b'9').contains(b)) {
        return None;
    }
    let from = Square::new(origin[0] - b'1', origin[1] - b'1');
    pos.piece_at(from)
        .is_some_and(|p| p.kind() == kind && p.color() == pos.side_to_move())
        .then(|| Move::normal(from, to, promote))
}

/// Reads a KI2 file: its position and its moves, under the rules its `作品形式` names.
pub fn read_ki2(text: &str) -> Result<(Position, Vec<Move>), RecordError> {
    let rules = kakinoki_rules(text);
    let mut root = kakinoki_position(text, rules)?;
    rules.adopt(&mut root);
    let moves_text: String = text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('▲') || l.starts_with('△'))
        .collect::<Vec<_>>()
        .join(" ");
    let moves = japanese::parse_japanese_line_under(&root, &moves_text, rules)?;
    Ok((root, moves))
}

const CSA_CODES: [(PieceType, &str); 14] = [
    (PieceType::Pawn, "FU"),
    (PieceType::Lance, "KY"),
    (PieceType::Knight, "KE"),
    (PieceType::Silver, "GI"),
    (PieceType::Gold, "KI"),
    (PieceType::Bishop, "KA"),
    (PieceType::Rook, "HI"),
    (PieceType::King, "OU"),
    (PieceType::ProPawn, "TO"),
    (PieceType::ProLance, "NY"),
    (PieceType::ProKnight, "NK"),
    (PieceType::ProSilver, "NG"),
    (PieceType::Horse, "UM"),
    (PieceType::Dragon, "RY"),
];

fn csa_code(kind: PieceType) -> &'static str {
    CSA_CODES
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, c)| *c)
        .expect("every kind has a CSA code")
}

fn csa_kind(code: &str) -> Option<PieceType> {
    CSA_CODES.iter().find(|(_, c)| *c == code).map(|(k, _)| *k)
}

fn csa_sign(color: Color) -> char {
    match color {
        Color::Black => '+',
        Color::White => '-',
    }
}

/// The solution `line` of a `stipulation` problem from `root` as a CSA (V2.2) record (the
/// stipulation in a comment line).
pub fn to_csa(root: &Position, stipulation: Stipulation, line: &[Move]) -> String {
    let mut s = format!("V2.2\n'作品形式：{}\nN+\nN-\n", stipulation.japanese());
    for rank in 0..9u8 {
        s.push_str(&format!("P{}", rank + 1));
        for file in (0..9u8).rev() {
            match root.piece_at(Square::new(file, rank)) {
                None => s.push_str(" * "),
                Some(p) => {
                    s.push(csa_sign(p.color()));
                    s.push_str(csa_code(p.kind()));
                }
            }
        }
        s.push('\n');
    }
    for color in Color::ALL {
        let hand = root.hand(color);
        if PieceType::HAND.iter().any(|&k| hand.count(k) > 0) {
            s.push('P');
            s.push(csa_sign(color));
            for kind in PieceType::HAND {
                for _ in 0..hand.count(kind) {
                    s.push_str("00");
                    s.push_str(csa_code(kind));
                }
            }
            s.push('\n');
        }
    }
    s.push(csa_sign(root.side_to_move()));
    s.push('\n');
    let mut pos = root.clone();
    for &m in line {
        let us = pos.side_to_move();
        let (from, kind) = if m.is_drop() {
            ("00".to_string(), m.dropped())
        } else {
            let kind = pos.piece_at(m.from()).expect("a piece to move").kind();
            let after = if m.is_promotion() {
                kind.promoted()
            } else {
                kind
            };
            (
                format!("{}{}", m.from().file() + 1, m.from().rank() + 1),
                after,
            )
        };
        s.push_str(&format!(
            "{}{from}{}{}{}\n",
            csa_sign(us),
            m.to().file() + 1,
            m.to().rank() + 1,
            csa_code(kind)
        ));
        pos.do_move(m);
    }
    s.push_str("%TSUMI\n");
    s
}

/// Reads a CSA record written as [`to_csa`] writes it (board rows, hands, side, moves).
pub fn read_csa(text: &str) -> Result<(Position, Vec<Move>), RecordError> {
    let csa = |line: usize, what: &str| RecordError::Csa {
        line,
        what: what.to_string(),
    };
    let mut board: Vec<Option<Piece>> = vec![None; 81];
    let mut hands: Vec<(Color, PieceType)> = Vec::new();
    let mut side = None;
    let mut move_lines = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim_end();
        let n = n + 1;
        let color_of = |c: u8| match c {
            b'+' => Some(Color::Black),
            b'-' => Some(Color::White),
            _ => None,
        };
        // A board row: `P1` and nine cells of three characters (trailing blanks may be cut).
        let row = line
            .strip_prefix('P')
            .filter(|r| r.as_bytes().first().is_some_and(u8::is_ascii_digit))
            .map(|r| format!("{r:<28}"));
        if let Some(row) = row {
            if row.len() != 28 || !row.is_ascii() {
                return Err(csa(
                    n,
                    "a board row is P1 .. P9 and nine cells like ' * ' or '+FU'",
                ));
            }
            let rank = row.as_bytes()[0].wrapping_sub(b'1');
            if rank > 8 {
                return Err(csa(n, "a board row is P1 .. P9"));
            }
            for i in 0..9 {
                let cell = &row[1 + 3 * i..4 + 3 * i];
                if cell == " * " {
                    continue;
                }
                let color = color_of(cell.as_bytes()[0]).ok_or_else(|| csa(n, "bad cell"))?;
                let kind = csa_kind(&cell[1..]).ok_or_else(|| csa(n, "unknown piece"))?;
                board[Square::new(8 - i as u8, rank).index()] = Some(Piece::new(color, kind));
            }
        } else if let Some(rest) = line.strip_prefix("P+").or_else(|| line.strip_prefix("P-")) {
            let color = if line.starts_with("P+") {
                Color::Black
            } else {
                Color::White
            };
            for chunk in rest.as_bytes().chunks(4) {
                let code = std::str::from_utf8(&chunk[2.min(chunk.len())..]).unwrap_or("");
                let kind = csa_kind(code).ok_or_else(|| csa(n, "unknown piece in hand"))?;
                hands.push((color, kind));
            }
        } else if line == "+" || line == "-" {
            side = color_of(line.as_bytes()[0]);
        } else if line.starts_with(['+', '-']) {
            // A move, with a time after a comma perhaps (`+7776FU,T12`).
            let mv = line.split(',').next().unwrap_or(line);
            if mv.len() != 7 || !mv.is_ascii() {
                return Err(csa(n, "a move is +/-, four digits and a piece, as +7776FU"));
            }
            move_lines.push((n, mv));
        }
    }
    let side = side.ok_or_else(|| csa(0, "no side to move ('+' or '-')"))?;
    // Through SFEN, so that the position gets every check the SFEN reader makes.
    let mut sfen = String::new();
    for rank in 0..9u8 {
        let mut empty = 0;
        for file in (0..9u8).rev() {
            match board[Square::new(file, rank).index()] {
                None => empty += 1,
                Some(p) => {
                    if empty > 0 {
                        sfen.push_str(&empty.to_string());
                        empty = 0;
                    }
                    sfen.push_str(&p.sfen());
                }
            }
        }
        if empty > 0 {
            sfen.push_str(&empty.to_string());
        }
        if rank < 8 {
            sfen.push('/');
        }
    }
    sfen.push_str(if side == Color::Black { " b " } else { " w " });
    let hand: String = hands
        .iter()
        .map(|&(c, k)| Piece::new(c, k).sfen())
        .collect();
    sfen.push_str(if hand.is_empty() { "-" } else { &hand });
    sfen.push_str(" 1");
    let root = Position::from_sfen(&sfen).map_err(|e| csa(0, &e.to_string()))?;
    let mut pos = root.clone();
    let mut moves = Vec::new();
    for (i, (n, line)) in move_lines.into_iter().enumerate() {
        let b = line.as_bytes();
        let square = |file: u8, rank: u8| {
            let (f, r) = (file.wrapping_sub(b'1'), rank.wrapping_sub(b'1'));
            (f < 9 && r < 9)
                .then(|| Square::new(f, r))
                .ok_or_else(|| csa(n, "a square is two digits 1-9"))
        };
        let kind = line
            .get(5..)
            .and_then(csa_kind)
            .ok_or_else(|| csa(n, "unknown piece"))?;
        let to = square(b[3], b[4])?;
        let m = if &b[1..3] == b"00" {
            Move::drop(kind, to)
        } else {
            let from = square(b[1], b[2])?;
            let before = pos
                .piece_at(from)
                .ok_or_else(|| csa(n, "no piece to move"))?;
            Move::normal(from, to, before.kind() != kind)
        };
        if !super::movegen::is_legal_move(&pos, m) {
            return Err(RecordError::Illegal {
                index: i + 1,
                text: line.to_string(),
            });
        }
        pos.do_move(m);
        moves.push(m);
    }
    Ok((root, moves))
}

/// For each move of `line` from `root`: the home it chose when it is a capture on file 5 with
/// both homes empty under キルケ or アンチキルケ (the captured piece's home, or the capturer's),
/// else None. What JSON's `rebirths` reports.
pub fn chosen_homes(
    root: &Position,
    line: &[Move],
    setting: CaptureSetting,
) -> Vec<Option<Square>> {
    let mut pos = root.clone();
    pos.set_capture_setting(setting);
    let mut homes = Vec::with_capacity(line.len());
    for &m in line {
        let capture = !m.is_drop() && pos.piece_at(m.to()).is_some();
        let chosen = (capture
            && matches!(setting.rule, CaptureRule::Circe | CaptureRule::AntiCirce)
            && capture_rule::has_two_choices(&pos, setting, m.plain()))
        .then(|| {
            let after = capture_rule::aftermath(&pos, setting, m);
            after.victim_to.map_or(after.capturer_to, |(sq, _)| sq)
        });
        homes.push(chosen);
        pos.do_move(m);
    }
    homes
}
