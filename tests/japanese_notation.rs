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

/// FM's published solutions (an independent writer of the same notation): read by our reader
/// they give the reference lines, and our writer, put in FM's compact form, gives their text.
#[test]
fn fm_published_notation_matches_both_ways() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/fm3_solutions.tsv"
    ))
    .unwrap();
    let problems = helpmates();
    let mut checked = 0;
    for row in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("name\t"))
    {
        let f: Vec<&str> = row.split('\t').collect();
        let p = problems.iter().find(|p| p.name == f[0]).unwrap();
        let root = Position::from_sfen(&p.sfen).unwrap();
        let read = parse_japanese_line(&root, f[1]).unwrap_or_else(|e| panic!("{}: {e}", p.name));
        let usi: Vec<String> = read.iter().map(|m| m.to_string()).collect();
        assert_eq!(usi, p.line, "{}", p.name);
        let ours = line_to_japanese(&root, &read);
        let compact: String = ours
            .chars()
            .filter(|c| *c != '▲' && *c != '△')
            .map(|c| match c {
                '１'..='９' => char::from_u32(c as u32 - '１' as u32 + '1' as u32).unwrap(),
                '一' => '1',
                '二' => '2',
                '三' => '3',
                '四' => '4',
                '五' => '5',
                '六' => '6',
                '七' => '7',
                '八' => '8',
                '九' => '9',
                other => other,
            })
            .collect();
        assert_eq!(compact, f[1], "{}", p.name);
        checked += 1;
    }
    assert_eq!(checked, 9);
}
