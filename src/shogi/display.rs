//! A plain-text board diagram (for the `d` debug command and the CLI).

use super::position::Position;
use super::types::{Color, PieceType, Square};

/// The board as ASCII lines: files 9..1 left to right, ranks a..i top to bottom, White's pieces
/// in lower case, promoted pieces with '+', then both hands and the side to move.
pub fn board_lines(pos: &Position) -> Vec<String> {
    let mut lines = vec!["   9  8  7  6  5  4  3  2  1".to_string()];
    lines.push(" +---------------------------+".to_string());
    for rank in 0..9u8 {
        let mut row = String::from(" |");
        for file in (0..9u8).rev() {
            let cell = match pos.piece_at(Square::new(file, rank)) {
                None => " . ".to_string(),
                Some(p) => format!("{:>2} ", p.sfen()),
            };
            row.push_str(&cell);
        }
        row.push_str(&format!("| {}", (b'a' + rank) as char));
        lines.push(row);
    }
    lines.push(" +---------------------------+".to_string());
    for color in [Color::White, Color::Black] {
        let hand = pos.hand(color);
        let mut text = String::new();
        for kind in PieceType::HAND_PRINT_ORDER {
            let n = hand.count(kind);
            if n > 0 {
                let c = kind.sfen_char();
                let c = if color == Color::White {
                    c.to_ascii_lowercase()
                } else {
                    c
                };
                text.push_str(&if n > 1 {
                    format!("{c}{n} ")
                } else {
                    format!("{c} ")
                });
            }
        }
        let name = if color == Color::Black {
            "black (sente)"
        } else {
            "white (gote)"
        };
        lines.push(format!(
            " {name} hand: {}",
            if text.is_empty() {
                "-"
            } else {
                text.trim_end()
            }
        ));
    }
    let side = match pos.side_to_move() {
        Color::Black => "black (sente)",
        Color::White => "white (gote)",
    };
    lines.push(format!(" side to move: {side}"));
    lines
}
