//! Published perft counts (tests/data/perft.tsv, copied from the shared reference data with its
//! source column): every row of at most 60 million nodes must match exactly.

use kyozume::shogi::perft::{divide, perft};
use kyozume::shogi::Position;

const LIMIT: u64 = 60_000_000;

struct Row {
    sfen: String,
    depth: u32,
    nodes: u64,
}

fn rows() -> Vec<Row> {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/perft.tsv"))
            .expect("tests/data/perft.tsv");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("sfen\t") && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            Row {
                sfen: f[0].to_string(),
                depth: f[1].parse().expect("depth"),
                nodes: f[2].parse().expect("nodes"),
            }
        })
        .collect()
}

#[test]
fn published_counts_up_to_sixty_million() {
    let rows: Vec<Row> = rows().into_iter().filter(|r| r.nodes <= LIMIT).collect();
    assert!(
        rows.len() >= 30,
        "expected the small rows of the table, got {}",
        rows.len()
    );
    for r in &rows {
        let mut pos = Position::from_sfen(&r.sfen).expect("perft SFEN parses");
        let got = perft(&mut pos, r.depth, true);
        assert_eq!(got, r.nodes, "perft({}) of {}", r.depth, r.sfen);
    }
}

#[test]
fn bulk_counting_agrees_with_divide_without_bulk() {
    // Bulk counting must never change a count: compare it with full make/unmake per leaf.
    for r in rows()
        .into_iter()
        .filter(|r| r.nodes <= 3_000_000 && r.depth >= 1)
    {
        let mut pos = Position::from_sfen(&r.sfen).expect("perft SFEN parses");
        let parts = divide(&mut pos, r.depth, false);
        let total: u64 = parts.iter().map(|(_, n)| n).sum();
        assert_eq!(total, r.nodes, "divide({}) of {}", r.depth, r.sfen);
        assert_eq!(perft(&mut pos, r.depth, true), total);
        assert_eq!(
            pos.to_sfen(),
            Position::from_sfen(&r.sfen).unwrap().to_sfen()
        );
    }
}
