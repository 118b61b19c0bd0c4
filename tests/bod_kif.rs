//! BOD diagrams and KIF files, in the layouts of Kifu for Windows, 柿木将棋, ShogiGUI and FM,
//! read to the right SFEN; malformed diagrams name the line and what was expected.

mod common;

use common::{helpmates, nomates};
use kyozume::shogi::kif::{parse_bod, to_bod, BodError};
use kyozume::shogi::{Color, Position, SfenError};

fn board_of(sfen: &str) -> String {
    // SFEN without the move number, which diagrams do not carry.
    let p = Position::from_sfen(sfen).unwrap();
    let s = p.to_sfen();
    s.rsplit_once(' ').unwrap().0.to_string()
}

fn parsed(text: &str) -> String {
    let p = parse_bod(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    board_of(&p.to_sfen())
}

fn sfen_of(name: &str) -> String {
    helpmates()
        .into_iter()
        .find(|p| p.name == name)
        .map(|p| p.sfen)
        .or_else(|| {
            nomates()
                .into_iter()
                .find(|(n, _)| n == name)
                .map(|(_, s)| s)
        })
        .unwrap()
}

#[test]
fn every_reference_position_round_trips_through_a_diagram() {
    let mut n = 0;
    let all = helpmates()
        .into_iter()
        .map(|p| p.sfen)
        .chain(nomates().into_iter().map(|(_, s)| s));
    for sfen in all {
        let pos = Position::from_sfen(&sfen).unwrap();
        assert_eq!(parsed(&to_bod(&pos)), board_of(&sfen));
        n += 1;
    }
    assert!(n >= 100);
}

/// Kifu for Windows: a whole .kif with its headers, the diagram, and the solution's moves.
#[test]
fn kifu_for_windows_kif_file() {
    let text = "\
# ---- Kifu for Windows V7 V7.70 棋譜ファイル ----
開始日時：2026/11/22
手合割：平手
後手の持駒：飛　歩五　
  ９ ８ ７ ６ ５ ４ ３ ２ １
+---------------------------+
| ・ ・ ・ ・ ・ ・ ・ ・ ・|一
| 金 ・ ・v銀 ・ ・ ・ ・ 金|二
| 香 香v歩 桂 金 桂v歩 歩 歩|三
| ・ ・ ・ ・ 香 ・ ・ ・ ・|四
| ・v銀 桂 ・ ・ ・ 桂 ・ ・|五
| ・v金 ・v角v歩v角 ・v銀v銀|六
| ・v歩 香 ・ ・ ・ 飛 ・ ・|七
| 歩 ・ ・ ・ ・v玉 ・ ・ ・|八
| ・ 歩 歩 歩 歩 ・ ・ ・ 玉|九
+---------------------------+
先手の持駒：歩二　
先手：
後手：
手数----指手---------消費時間--
   1 ４九歩打     ( 0:00/00:00:00)
   2 ３八玉(48)   ( 0:00/00:00:00)
";
    assert_eq!(parsed(text), board_of(&sfen_of("fmrs_test_solve_15")));
}

/// The board of fmrs_no_answer_1 (kings on 5一 and 1七, pawns on 5三 and 1六).
const NO_ANSWER_1_BOARD: &str = "\
  ９ ８ ７ ６ ５ ４ ３ ２ １
+---------------------------+
| ・ ・ ・ ・v玉 ・ ・ ・ ・|一
| ・ ・ ・ ・ ・ ・ ・ ・ ・|二
| ・ ・ ・ ・ 歩 ・ ・ ・ ・|三
| ・ ・ ・ ・ ・ ・ ・ ・ ・|四
| ・ ・ ・ ・ ・ ・ ・ ・ ・|五
| ・ ・ ・ ・ ・ ・ ・ ・v歩|六
| ・ ・ ・ ・ ・ ・ ・ ・ 玉|七
| ・ ・ ・ ・ ・ ・ ・ ・ ・|八
| ・ ・ ・ ・ ・ ・ ・ ・ ・|九
+---------------------------+
";

/// 柿木将棋: the defender's hand written as 残り全部.
#[test]
fn kakinoki_remaining_pieces_convention() {
    let text = format!(
        "# ---- 柿木将棋IX V9.21 棋譜ファイル ----\n後手の持駒：残り全部\n{NO_ANSWER_1_BOARD}先手の持駒：金　\n"
    );
    assert_eq!(parsed(&text), board_of(&sfen_of("fmrs_no_answer_1")));
}

/// ShogiGUI: promoted pieces (杏 圭 全 と 馬 龍) and hands on both sides.
#[test]
fn shogigui_promoted_pieces() {
    let text = "\
後手の持駒：金　銀　桂　香　歩　
  ９ ８ ７ ６ ５ ４ ３ ２ １
+---------------------------+
| 角v杏vとv桂 ・vと 飛vと ・|一
|v杏 飛 ・ ・ ・ ・ ・ ・ ・|二
| ・ ・ ・vとvとvと 角vと ・|三
| ・ ・vと ・vと ・ ・ ・ ・|四
| ・ ・ ・vと ・vと ・vとv杏|五
| ・ ・v桂 ・vと ・ ・vと ・|六
| ・ ・ ・vとvと ・v玉 ・v金|七
| ・ ・ ・ ・ ・ ・ ・v銀 ・|八
| ・ ・ ・v金v銀 ・vと ・ ・|九
+---------------------------+
先手の持駒：金　銀　桂　
手数＝0
先手番
";
    assert_eq!(parsed(text), board_of(&sfen_of("fmrs_ofm-139_5")));
    // The same position with a promoted silver, knight, horse and dragon swapped in.
    let more = text
        .replace("| 角v杏", "| 馬v杏")
        .replace("|v杏 飛", "|v杏 龍")
        .replace("v桂 ・vと ・ ・vと ・|六", "v圭 ・vと ・ ・vと ・|六")
        .replace("v金v銀 ・vと", "v金v全 ・vと");
    let p = parse_bod(&more).unwrap();
    assert_eq!(
        board_of(&p.to_sfen()),
        "+B+l+pn1+pR+p1/+l+R7/3+p+p+pB+p1/2+p1+p4/3+p1+p1+p+l/2+n1+p2+p1/3+p+p1k1g/7s1/3g+s1+p2 b GSNgsnlp"
    );
}

/// FM: problem and final position side by side, one bare 持駒 line (the attacker's), the
/// defender holding all the rest.
#[test]
fn fm_side_by_side_diagram() {
    let text = "\
ばか詰 11手

  ９ ８ ７ ６ ５ ４ ３ ２ １             ９ ８ ７ ６ ５ ４ ３ ２ １
+---------------------------+          +---------------------------+
| ・ ・ ・ ・ ・ ・ ・ ・ ・|一        | ・ ・ ・ ・ ・ ・ ・ ・ ・|一
| ・ ・ ・ ・ ・ ・ ・ ・ ・|二        | ・ ・ ・ ・ ・ ・ ・ ・ ・|二
| ・ ・ ・ ・ ・ ・ ・ ・ ・|三        | ・ ・ ・ ・ ・ ・ ・ ・ ・|三
| ・ ・ ・ ・ ・ ・ ・ ・ ・|四        | ・ ・ ・ ・ ・ ・ ・ ・ ・|四
| ・ ・ ・ ・v玉 ・ ・ 金 ・|五        | ・ ・ ・ 金 金 ・ ・ ・ ・|五
| ・ ・ ・ ・ ・ ・ 金 ・ ・|六        | ・ ・ ・ ・v玉 ・ 金 ・ ・|六
| ・ ・ ・ ・ ・ 金 ・ ・ ・|七        | ・ ・ ・ ・ ・ ・ ・ ・ ・|七
| ・ ・ ・ ・ 金 ・ ・ ・ ・|八        | ・ ・ ・ ・ 金 ・ ・ ・ ・|八
| ・ ・ ・ ・ ・ ・ ・ ・ ・|九        | ・ ・ ・ ・ ・ ・ ・ ・ ・|九
+---------------------------+          +---------------------------+
持駒：なし                             持駒：なし

46金直 44玉 35金寄 54玉 45金寄 65玉 55金上 66玉 65金 56玉
55金右 まで 11手
";
    assert_eq!(parsed(text), board_of(&sfen_of("fm3_gold_only_1")));
}

/// White to move (後手番), hands with kanji counts up to 十八, 王 for the king.
#[test]
fn white_to_move_and_big_counts() {
    let text = "\
後手の持駒：なし
  ９ ８ ７ ６ ５ ４ ３ ２ １
+---------------------------+
| ・ ・ ・ ・v王 ・ ・ ・ ・|一
| ・ ・ ・ ・ ・ ・ ・ ・ ・|二
| ・ ・ ・ ・ ・ ・ ・ ・ ・|三
| ・ ・ ・ ・ ・ ・ ・ ・ ・|四
| ・ ・ ・ ・ ・ ・ ・ ・ ・|五
| ・ ・ ・ ・ ・ ・ ・ ・ ・|六
| ・ ・ ・ ・ ・ ・ ・ ・ ・|七
| ・ ・ ・ ・ ・ ・ ・ ・ ・|八
| ・ ・ ・ ・ 玉 ・ ・ ・ ・|九
+---------------------------+
先手の持駒：飛二　角二　金四　銀四　桂四　香四　歩十八　
後手番
";
    assert_eq!(parsed(text), "4k4/9/9/9/9/9/9/9/4K4 w 2R2B4G4S4N4L18P");
}

/// 柿木将棋 with its trailer lines, FM with a non-empty attacker hand, a handicap-labelled
/// diagram (上手 / 下手) and ShogiGUI with White to move: four more layouts.
#[test]
fn more_exporter_layouts() {
    let board = NO_ANSWER_1_BOARD;
    let expected = board_of(&sfen_of("fmrs_no_answer_1"));
    // 柿木: defender's hand spelled out in kanji counts, then the move counter and 「まで」.
    let kakinoki = format!(
        "後手の持駒：飛二　角二　金三　銀四　桂四　香四　歩十六　\n{board}先手の持駒：金　\n手数＝0　まで\n"
    );
    assert_eq!(parsed(&kakinoki), expected);
    // FM: the attacker's hand on the bare 持駒 line, everything else to the defender.
    let fm = format!("ばか詰\n{board}持駒：金\n");
    assert_eq!(parsed(&fm), expected);
    // Handicap labels: 上手 (White) and 下手 (Black).
    let handicap = format!("上手の持駒：残り全部\n{board}下手の持駒：金\n下手番\n");
    assert_eq!(parsed(&handicap), expected);
    // ShogiGUI with White to move: here Black's king stands in check from the pawn on 1六, so
    // the diagram is refused as a position, with the reason.
    let white = format!("後手の持駒：残り全部\n{board}先手の持駒：金　\n後手番\n");
    assert_eq!(
        parse_bod(&white),
        Err(BodError::Invalid(SfenError::OpponentInCheck(Color::Black)))
    );
}

/// A KIF without a diagram starts from its 手合割 (平手 only).
#[test]
fn kif_without_diagram() {
    let text = "手合割：平手\n先手：\n後手：\n手数----指手---------消費時間--\n";
    assert_eq!(
        parsed(text),
        "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b -"
    );
    assert_eq!(
        parse_bod("手合割：香落ち\n"),
        Err(BodError::Handicap("香落ち".into()))
    );
}

#[test]
fn malformed_diagrams_name_the_line_and_the_expectation() {
    let good = to_bod(&Position::from_sfen(&sfen_of("fm3_gold_only_1")).unwrap());
    let lines: Vec<&str> = good.lines().collect();
    let with = |i: usize, replacement: &str| {
        let mut v: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        v[i] = replacement.to_string();
        v.join("\n")
    };
    let without = |i: usize| {
        let mut v: Vec<&str> = lines.clone();
        v.remove(i);
        v.join("\n")
    };
    // Line numbers are 1-based: line 1 is the defender's hand, 2 the file numbers, 3 the top
    // border, 4..=12 the ranks, 13 the bottom border.
    let cases: Vec<(String, &str)> = vec![
        (
            with(5, "| ・ ・ ・ ・ ・ ・ ・ ・|二"),
            "line 6: expected 9 squares in the rank",
        ),
        (
            with(5, "| ・ ・ ・ ・ ・ ・ ・ ・ ・ ・|二"),
            "line 6: expected 9 squares in the rank",
        ),
        (
            with(6, "| ・ ・ ・ ・ ・ ・ ・ ・ ・ 二"),
            "line 7: expected a board rank ending with '|'",
        ),
        (
            with(6, "  ・ ・ ・ ・ ・ ・ ・ ・ ・|三"),
            "line 7: expected a board rank starting with '|'",
        ),
        (
            with(7, "| ・ ・ ・ ・ 象 ・ ・ ・ ・|四"),
            "line 8: unknown piece '象'",
        ),
        (
            without(12),
            "line 13: expected the board's bottom border '+---------------------------+'",
        ),
        (
            with(0, "後手の持駒：歩百"),
            "line 1: bad piece count '歩百' in hand",
        ),
        (with(0, "後手の持駒：玉"), "line 1: unknown piece '玉'"),
        (
            with(13, "先手の持駒：残り全部") + "\n後手の持駒：残り全部",
            "both sides' hands say 残り全部 (all remaining pieces)",
        ),
        (
            "ばか詰 11手\n".to_string(),
            "no board found: expected a border line '+---------------------------+'",
        ),
    ];
    for (text, message) in cases {
        match parse_bod(&text) {
            Ok(p) => panic!("parsed as {}:\n{text}", p.to_sfen()),
            Err(e) => assert_eq!(e.to_string(), message, "\n{text}"),
        }
    }
    // A diagram that is well formed but not a legal position says why.
    let two_kings = with(10, "| ・ ・ ・ ・ 玉 ・ 玉 ・ ・|八");
    assert!(matches!(parse_bod(&two_kings), Err(BodError::Invalid(_))));
}
