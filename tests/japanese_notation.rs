//! Japanese notation round trip: every solution line in the reference data, written in Japanese
//! by the engine, reads back (by the engine's own reader) to the same USI moves; 同 appears
//! exactly when a move lands where the previous one did.

mod common;

use common::helpmates;
use kyozume::shogi::japanese::{line_to_japanese, parse_japanese_line};
use kyozume::shogi::Position;

#[test]
fn every_published_line_round_trips_through_japanese() {
    let mut lines = 0;
    let mut plies = 0;
    for p in helpmates().iter().filter(|p| !p.line.is_empty()) {
        let root = Position::from_sfen(&p.sfen).unwrap();
        let mut pos = root.clone();
        let moves: Vec<_> = p
            .line
            .iter()
            .map(|t| {
                let m = pos.parse_move(t).unwrap();
                pos.do_move(m);
                m
            })
            .collect();
        let text = line_to_japanese(&root, &moves);
        let words: Vec<&str> = text.split(' ').collect();
        assert_eq!(words.len(), moves.len(), "{}", p.name);
        for (i, w) in words.iter().enumerate() {
            let same_square = i > 0 && moves[i].to() == moves[i - 1].to();
            assert_eq!(
                w.contains('同'),
                same_square,
                "{}: move {} '{w}'",
                p.name,
                i + 1
            );
            let mark = if i % 2 == 0 { '▲' } else { '△' };
            let mark = if root.side_to_move() == kyozume::shogi::Color::Black {
                mark
            } else if mark == '▲' {
                '△'
            } else {
                '▲'
            };
            assert!(w.starts_with(mark), "{}: move {} '{w}'", p.name, i + 1);
        }
        let back = parse_japanese_line(&root, &text).unwrap_or_else(|e| panic!("{}: {e}", p.name));
        assert_eq!(back, moves, "{}", p.name);
        lines += 1;
        plies += moves.len();
    }
    eprintln!("{lines} lines, {plies} plies round-tripped");
    assert!(lines >= 100);
}
