//! KIF, KI2 and CSA records of solutions: every published line in the reference data written in
//! each format and read back by the project's own readers gives the same position and moves;
//! the KIF follows Kakinoki's definition (打 on every drop, the origin on every board move,
//! 同　 for a recapture, the header fields and trailer GUIs expect).

mod common;

use common::helpmates;
use kyozume::shogi::record::{read_csa, read_ki2, read_kif, to_csa, to_ki2, to_kif};
use kyozume::shogi::{Move, Position, Stipulation};

fn replay(root: &Position, usi: &[String]) -> Vec<Move> {
    let mut pos = root.clone();
    usi.iter()
        .map(|t| {
            let m = pos.parse_move(t).unwrap();
            pos.do_move(m);
            m
        })
        .collect()
}

#[test]
fn every_published_line_round_trips_through_kif_ki2_and_csa() {
    let mut lines = 0;
    let mut plies = 0;
    for p in helpmates().iter().filter(|p| !p.line.is_empty()) {
        let root = Position::from_sfen(&p.sfen).unwrap();
        let moves = replay(&root, &p.line);
        let kif = to_kif(&root, Stipulation::HELPMATE, &moves, "2026/11/23 09:00:00");
        let ki2 = to_ki2(&root, Stipulation::HELPMATE, &moves, "2026/11/23 09:00:00");
        let csa = to_csa(&root, Stipulation::HELPMATE, &moves);
        for (format, back) in [
            ("kif", read_kif(&kif)),
            ("ki2", read_ki2(&ki2)),
            ("csa", read_csa(&csa)),
        ] {
            let (pos, read) = back.unwrap_or_else(|e| panic!("{} {format}: {e}", p.name));
            assert_eq!(pos.key(), root.key(), "{} {format}: position", p.name);
            assert_eq!(read, moves, "{} {format}: moves", p.name);
        }
        // Kakinoki's KIF: every drop with 打, every board move with its origin.
        let body: Vec<&str> = kif
            .lines()
            .skip_while(|l| !l.starts_with("手数----指手---------消費時間--"))
            .skip(1)
            .collect();
        assert_eq!(body.len(), moves.len() + 1, "{}", p.name);
        for (line, m) in body.iter().zip(&moves) {
            let line = line.split("( 0:00").next().unwrap();
            if m.is_drop() {
                assert!(line.contains('打') && !line.contains('('), "{line}");
            } else {
                let origin = format!("({}{})", m.from().file() + 1, m.from().rank() + 1);
                assert!(line.contains(&origin) && !line.contains('打'), "{line}");
            }
        }
        assert_eq!(
            body.last().unwrap().trim(),
            format!("まで{}手で詰み", moves.len())
        );
        assert!(kif.contains("\n開始日時：2026/11/23 09:00:00\n"));
        assert!(kif.contains("後手の持駒：") && kif.contains("先手の持駒："));
        assert!(ki2.ends_with(&format!("まで{}手で詰み\n", moves.len())));
        assert!(csa.starts_with("V2.2\n") && csa.ends_with("%TSUMI\n"));
        lines += 1;
        plies += moves.len();
    }
    eprintln!("{lines} lines, {plies} plies");
    assert!(lines >= 100);
}

#[test]
fn kif_moves_are_written_as_kakinoki_defines_them() {
    let root = Position::startpos();
    let moves = replay(
        &root,
        &["7g7f", "3c3d", "8h2b+", "3a2b", "B*4e"].map(String::from),
    );
    let kif = to_kif(&root, Stipulation::HELPMATE, &moves, "2026/11/23 09:00:00");
    assert!(kif.contains("手合割：平手\n"), "{kif}");
    let body: Vec<&str> = kif
        .lines()
        .skip_while(|l| !l.starts_with("手数"))
        .skip(1)
        .map(|l| l.split("( 0:00").next().unwrap().trim())
        .collect();
    assert_eq!(
        body,
        [
            "1 ７六歩(77)",
            "2 ３四歩(33)",
            "3 ２二角成(88)",
            "4 同　銀(31)",
            "5 ４五角打",
            "まで5手で詰み"
        ]
    );
    let csa = to_csa(&root, Stipulation::HELPMATE, &moves);
    assert!(csa.contains("\n+\n+7776FU\n-3334FU\n+8822UM\n-3122GI\n+0045KA\n%TSUMI\n"));
    // KI2: Japanese notation, 打 only where a board piece could also go (none could here).
    let ki2 = to_ki2(&root, Stipulation::HELPMATE, &moves, "2026/11/23 09:00:00");
    assert!(
        ki2.contains("▲７六歩 △３四歩 ▲２二角成 △同銀 ▲４五角\n"),
        "{ki2}"
    );
}

#[test]
fn malformed_records_give_errors_not_panics() {
    let root = Position::startpos();
    let good = to_kif(
        &root,
        Stipulation::HELPMATE,
        &replay(&root, &["7g7f".to_string()]),
        "x",
    );
    for bad in [
        good.replace("７六歩(77)", "７六歩(78)"),
        good.replace("７六歩(77)", "７六飛(77)"),
        good.replace("   1 ", "   2 "),
        good.replace("(77)", "(7"),
    ] {
        assert!(read_kif(&bad).is_err(), "{bad}");
    }
    let csa = to_csa(
        &root,
        Stipulation::HELPMATE,
        &replay(&root, &["7g7f".to_string()]),
    );
    assert!(read_csa(&csa.replace("+7776FU", "+7775FU")).is_err());
    assert!(read_csa(&csa.replace("\n+\n", "\n")).is_err());
    for bad_move in [
        "+7A76FU",
        "+0076XX",
        "+7776FU\n-0000FU",
        "+9976FU",
        "+7700FU",
        "+77歩FU",
        "P1歩歩歩歩歩歩歩歩歩",
    ] {
        assert!(
            read_csa(&csa.replace("+7776FU", bad_move)).is_err(),
            "{bad_move}"
        );
    }
    assert!(read_ki2("手合割：平手\n▲７五歩\n").is_err());
}
