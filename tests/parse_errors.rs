//! Malformed SFEN and USI move strings give specific errors, and random input never panics.

use kyozume::shogi::{Color, MoveError, Position, SfenError, Square};
use proptest::prelude::*;

const START_BOARD: &str = "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL";

fn sfen_err(text: &str) -> SfenError {
    match Position::from_sfen(text) {
        Ok(p) => panic!("{text:?} parsed as {}", p.to_sfen()),
        Err(e) => e,
    }
}

#[test]
fn malformed_sfen_strings_give_specific_errors() {
    use SfenError::*;
    let cases: Vec<(String, SfenError)> = vec![
        ("".into(), Empty),
        ("   ".into(), Empty),
        (START_BOARD.into(), FieldCount(1)),
        (format!("{START_BOARD} b"), FieldCount(2)),
        (format!("{START_BOARD} b - 1 extra"), FieldCount(5)),
        ("9/9/9/9/9/9/9/9 b - 1".into(), RankCount(8)),
        ("9/9/9/9/9/9/9/9/9/9 b - 1".into(), RankCount(10)),
        (
            "4k4/9/9/9/9/9/9/9/8 b - 1".into(),
            RankTooShort {
                rank: 'i',
                squares: 8,
            },
        ),
        (
            "4k5/9/9/9/9/9/9/9/9 b - 1".into(),
            RankTooLong { rank: 'a' },
        ),
        (
            "4k4/9/9/9/9/9/9/9/9P b - 1".into(),
            RankTooLong { rank: 'i' },
        ),
        (
            "4k4/9/9/9/9/9/9/9/4x4 b - 1".into(),
            BadBoardChar { rank: 'i', ch: 'x' },
        ),
        (
            "4k4/0/9/9/9/9/9/9/9 b - 1".into(),
            BadBoardChar { rank: 'b', ch: '0' },
        ),
        (
            "4k4/9/9/9/4+G4/9/9/9/9 b - 1".into(),
            BadPromotion { rank: 'e' },
        ),
        (
            "4k4/9/9/9/4+K4/9/9/9/9 b - 1".into(),
            BadPromotion { rank: 'e' },
        ),
        (
            "4k4/9/9/9/4++P4/9/9/9/9 b - 1".into(),
            BadPromotion { rank: 'e' },
        ),
        (
            "4k4/9/9/9/8+/9/9/9/9 b - 1".into(),
            BadPromotion { rank: 'e' },
        ),
        (
            "4k4/9/9/9/4+4/9/9/9/9 b - 1".into(),
            BadPromotion { rank: 'e' },
        ),
        (format!("{START_BOARD} x - 1"), BadSide("x".into())),
        (format!("{START_BOARD} B - 1"), BadSide("B".into())),
        ("4k4/9/9/9/9/9/9/9/9 b 2X 1".into(), BadHandChar('X')),
        (
            "4k4/9/9/9/9/9/9/9/9 b 0P 1".into(),
            BadHandCount {
                piece: 'P',
                count: 0,
            },
        ),
        ("4k4/9/9/9/9/9/9/9/9 b P2 1".into(), DanglingHandCount),
        ("4k4/9/9/9/9/9/9/9/9 b K 1".into(), KingInHand),
        (
            "4k4/9/9/9/9/9/9/9/9 b 19P 1".into(),
            TooManyPieces {
                kind: 'P',
                count: 19,
                max: 18,
            },
        ),
        (
            "4k4/9/9/9/9/9/9/9/9 b 3R 1".into(),
            TooManyPieces {
                kind: 'R',
                count: 3,
                max: 2,
            },
        ),
        (
            "4k4/9/9/9/4R4/9/9/9/9 b Rr 1".into(),
            TooManyPieces {
                kind: 'R',
                count: 3,
                max: 2,
            },
        ),
        (format!("{START_BOARD} b - 0"), BadMoveNumber("0".into())),
        (format!("{START_BOARD} b - x1"), BadMoveNumber("x1".into())),
        (
            "4k4/9/9/9/9/9/9/9/3KK4 b - 1".into(),
            TwoKings {
                color: Color::Black,
            },
        ),
        (
            "4k3k/9/9/9/9/9/9/9/9 b - 1".into(),
            TwoKings {
                color: Color::White,
            },
        ),
        (
            "4k4/9/9/4P4/9/4P4/9/9/9 b - 1".into(),
            DoublePawn {
                color: Color::Black,
                file: 5,
            },
        ),
        (
            "4k4/9/9/8p/9/9/8p/9/9 b - 1".into(),
            DoublePawn {
                color: Color::White,
                file: 1,
            },
        ),
        (
            "P3k4/9/9/9/9/9/9/9/9 b - 1".into(),
            DeadPiece {
                piece: "P".into(),
                square: Square::from_usi("9a").unwrap(),
            },
        ),
        (
            "4k4/N8/9/9/9/9/9/9/9 b - 1".into(),
            DeadPiece {
                piece: "N".into(),
                square: Square::from_usi("9b").unwrap(),
            },
        ),
        (
            "4k4/9/9/9/9/9/9/9/l8 b - 1".into(),
            DeadPiece {
                piece: "l".into(),
                square: Square::from_usi("9i").unwrap(),
            },
        ),
        (
            "4k4/4R4/9/9/9/9/9/9/9 b - 1".into(),
            OpponentInCheck(Color::White),
        ),
        (
            "4k4/9/9/9/9/9/9/4r4/4K4 w - 1".into(),
            OpponentInCheck(Color::Black),
        ),
    ];
    assert!(cases.len() >= 30);
    for (text, expected) in cases {
        assert_eq!(sfen_err(&text), expected, "for {text:?}");
        // Every message is one ASCII line, suitable for `info string error: ...`.
        let msg = expected.to_string();
        assert!(msg.is_ascii() && !msg.contains('\n'), "{msg:?}");
    }
}

#[test]
fn malformed_moves_give_specific_errors() {
    use MoveError::*;
    let start = Position::startpos();
    let hand = Position::from_sfen("4k4/9/9/9/9/9/9/9/4K4 b Pp 1").unwrap();
    let cases: Vec<(&Position, &str, MoveError)> = vec![
        (&start, "", Syntax("".into())),
        (&start, "7g", Syntax("7g".into())),
        (&start, "7g7", Syntax("7g7".into())),
        (&start, "0g7f", Syntax("0g7f".into())),
        (&start, "7g7z", Syntax("7g7z".into())),
        (&start, "7g7f=", Syntax("7g7f=".into())),
        (&start, "7g7f++", Syntax("7g7f++".into())),
        (&start, "K*5e", Syntax("K*5e".into())),
        (&start, "p*5e", Syntax("p*5e".into())),
        (&start, "X*5e", Syntax("X*5e".into())),
        (&start, "P*5j", Syntax("P*5j".into())),
        (&start, "７g7f", Syntax("７g7f".into())),
        (&start, "5e5d", EmptyOrigin("5e5d".into())),
        (&start, "3c3d", NotOwnPiece("3c3d".into())),
        (&start, "P*5e", NotInHand("P*5e".into())),
        (&start, "7g7e", Illegal("7g7e".into())),
        (&start, "7g7f+", Illegal("7g7f+".into())),
        (&start, "5i4i", Illegal("5i4i".into())),
        (&start, "8h2b", Illegal("8h2b".into())),
        (&hand, "P*5a", Illegal("P*5a".into())),
    ];
    for (pos, text, expected) in cases {
        assert_eq!(pos.parse_move(text), Err(expected), "for {text:?}");
    }
    assert!(hand.parse_move("P*5e").is_ok());
    assert!(start.parse_move("5i5h").is_ok());
}

#[test]
fn pawn_drop_mate_is_rejected_but_pawn_drop_check_is_not() {
    // King on 1a boxed in by its own lance; the gold on 2c protects 1b.
    let pos = Position::from_sfen("7lk/9/7G1/9/9/9/9/9/4K4 b P 1").unwrap();
    assert_eq!(
        pos.parse_move("P*1b"),
        Err(MoveError::Illegal("P*1b".into()))
    );
    // Without the gold the king can take the pawn: a legal pawn-drop check.
    let pos = Position::from_sfen("7lk/9/9/9/9/9/9/9/4K4 b P 1").unwrap();
    assert!(pos.parse_move("P*1b").is_ok());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn random_bytes_never_panic_the_sfen_parser(bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = Position::from_sfen(&text);
    }

    #[test]
    fn sfen_like_strings_never_panic(text in "[1-9lnsgkrbpLNSGKRBP+/]{0,60} [bwx] [0-9PLNSGBRKplnsgbrk-]{0,12} [0-9]{0,3}") {
        if let Ok(pos) = Position::from_sfen(&text) {
            // Whatever parses prints back to something that parses to the same position.
            let again = Position::from_sfen(&pos.to_sfen()).unwrap();
            prop_assert_eq!(again.key(), pos.key());
        }
    }

    #[test]
    fn random_bytes_never_panic_the_move_parser(bytes in proptest::collection::vec(any::<u8>(), 0..8)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = Position::startpos().parse_move(&text);
    }

    #[test]
    fn move_like_strings_never_panic(text in "[0-9PLNSGBRK*a-j+]{0,6}") {
        let pos = Position::from_sfen("4k4/9/9/9/9/9/9/9/4K4 b RBGSNLP 1").unwrap();
        let _ = pos.parse_move(&text);
    }
}
