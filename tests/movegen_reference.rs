//! Cross-checks the fast generators against a second, deliberately naive implementation on
//! 100,000+ positions reached by random legal playouts from the start position and from sparse
//! tsume-like positions.
//!
//! The reference generates every pseudo-legal move square by square, keeps a move when the mover's
//! king is not attacked afterwards (found by playing it), and finds pawn-drop mate by playing the
//! drop and asking whether the opponent has any reference move. "Gives check" is likewise decided
//! by playing the move and looking at the opponent's king.

use kyozume::shogi::attacks::{attacks, legal_ranks, promotion_zone};
use kyozume::shogi::conditions::Plain;
use kyozume::shogi::movegen::{self, MoveList};
use kyozume::shogi::{Color, Move, Piece, PieceType, Position, Square};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeSet;

/// What the corpus exercised, so that a corpus missing a rule's hard cases fails the test.
#[derive(Default, Debug)]
struct Coverage {
    positions: usize,
    in_check: usize,
    double_check: usize,
    pawn_drop_mates_excluded: usize,
    discovered_checks: usize,
    checkmates: usize,
    no_king_for_mover: usize,
    mating_checks: usize,
    checks_kept_by_flights: usize,
    checks_dropped_by_flights: usize,
    pawn_drop_checks_left_out: usize,
}

fn king_safe_after(pos: &mut Position, m: Move) -> bool {
    let us = pos.side_to_move();
    pos.do_move(m);
    let safe = match pos.king(us) {
        Some(k) => !pos.is_attacked(!us, k, pos.occupied()),
        None => true,
    };
    pos.undo_move(m);
    safe
}

fn reference_legal(pos: &mut Position, check_pawn_drop_mate: bool) -> Vec<Move> {
    let us = pos.side_to_move();
    let occ = pos.occupied();
    let mut pseudo = Vec::new();
    for from in Square::all() {
        let Some(p) = pos.piece_at(from) else {
            continue;
        };
        if p.color() != us {
            continue;
        }
        let kind = p.kind();
        for to in attacks(us, kind, from, occ) {
            if pos.piece_at(to).is_some_and(|q| q.color() == us) {
                continue;
            }
            let zone = promotion_zone(us);
            if kind.can_promote() && (zone.has(from) || zone.has(to)) {
                pseudo.push(Move::normal(from, to, true));
            }
            if legal_ranks(us, kind).has(to) {
                pseudo.push(Move::normal(from, to, false));
            }
        }
    }
    for kind in PieceType::HAND {
        if !pos.hand(us).has(kind) {
            continue;
        }
        for to in Square::all() {
            if pos.piece_at(to).is_some() || !legal_ranks(us, kind).has(to) {
                continue;
            }
            if kind == PieceType::Pawn
                && (0..9).any(|r| {
                    pos.piece_at(Square::new(to.file(), r)) == Some(Piece::new(us, PieceType::Pawn))
                })
            {
                continue;
            }
            pseudo.push(Move::drop(kind, to));
        }
    }
    let mut legal = Vec::new();
    for m in pseudo {
        if !king_safe_after(pos, m) {
            continue;
        }
        if check_pawn_drop_mate && m.is_drop() && m.dropped() == PieceType::Pawn {
            pos.do_move(m);
            let mated = pos.in_check() && reference_legal(pos, false).is_empty();
            pos.undo_move(m);
            if mated {
                continue;
            }
        }
        legal.push(m);
    }
    legal
}

fn reference_gives_check(pos: &mut Position, m: Move) -> bool {
    pos.do_move(m);
    let check = pos.in_check();
    pos.undo_move(m);
    check
}

fn as_set(list: &[Move], what: &str, pos: &Position) -> BTreeSet<Move> {
    let set: BTreeSet<Move> = list.iter().copied().collect();
    assert_eq!(
        set.len(),
        list.len(),
        "{what} has duplicates in {}",
        pos.to_sfen()
    );
    set
}

/// Checks one position; returns its legal moves for the playout to continue.
fn check_position(pos: &mut Position, cov: &mut Coverage) -> Vec<Move> {
    let sfen = pos.to_sfen();
    cov.positions += 1;
    cov.in_check += pos.in_check() as usize;
    cov.double_check += pos.checkers().has_many() as usize;
    cov.no_king_for_mover += pos.king(pos.side_to_move()).is_none() as usize;
    let unfiltered = reference_legal(pos, false).len();
    assert_eq!(
        pos.key(),
        pos.compute_key(),
        "incremental key differs in {sfen}"
    );
    let reparsed = Position::from_sfen(&sfen).expect("a reached position parses");
    assert_eq!(
        reparsed.key(),
        pos.key(),
        "key differs from the reparsed one in {sfen}"
    );
    assert_eq!(
        reparsed.checkers(),
        pos.checkers(),
        "checkers differ from reparsed in {sfen}"
    );
    let mut unpacked = Position::empty();
    unpacked.unpack_from(&pos.pack());
    assert_eq!(
        without_move_number(&unpacked.to_sfen()),
        without_move_number(&sfen),
        "pack / unpack changed {sfen}"
    );
    assert_eq!(unpacked.key(), pos.key(), "key after unpacking {sfen}");
    assert_eq!(
        unpacked.checkers(),
        pos.checkers(),
        "checkers after unpacking {sfen}"
    );
    let reference: BTreeSet<Move> = reference_legal(pos, true).into_iter().collect();

    let mut list = MoveList::new();
    movegen::legal(pos, &mut list);
    let fast = as_set(&list, "legal", pos);
    assert_eq!(fast, reference, "legal moves differ in {sfen}");
    cov.pawn_drop_mates_excluded += unfiltered - reference.len();
    cov.checkmates += (pos.in_check() && reference.is_empty()) as usize;

    if pos.in_check() {
        let mut ev = MoveList::new();
        movegen::evasions(pos, &mut ev);
        assert_eq!(
            as_set(&ev, "evasions", pos),
            reference,
            "evasions differ in {sfen}"
        );
        assert_eq!(
            movegen::has_evasion(pos),
            !reference.is_empty(),
            "has_evasion in {sfen}"
        );
    }
    assert_eq!(
        movegen::is_checkmate(pos),
        pos.in_check() && reference.is_empty(),
        "is_checkmate in {sfen}"
    );

    let mut ch = MoveList::new();
    movegen::checks(pos, &mut ch);
    let fast_checks = as_set(&ch, "checks", pos);
    if let Some(ci) = pos.check_info() {
        cov.discovered_checks +=
            ch.iter()
                .any(|m| !m.is_drop() && ci.discoverers.has(m.from())) as usize;
    }
    let ref_checks: BTreeSet<Move> = reference
        .iter()
        .copied()
        .filter(|&m| reference_gives_check(pos, m))
        .collect();
    assert_eq!(fast_checks, ref_checks, "checks differ in {sfen}");
    // The last ply's checks: every check that mates is among them, every pawn drop left out
    // is said to be (the reference's pawn drops are legal ones, none of them a mate).
    let mut may_mate = MoveList::new();
    let left_out = movegen::checks_that_may_mate_under::<Plain>(pos, &mut may_mate);
    let may_mate = as_set(&may_mate, "checks that may mate", pos);
    let not_pawn_drops: BTreeSet<Move> = ref_checks
        .iter()
        .copied()
        .filter(|m| !m.is_pawn_drop())
        .collect();
    assert_eq!(
        may_mate, not_pawn_drops,
        "checks that may mate differ in {sfen}"
    );
    if ref_checks.iter().any(|m| m.is_pawn_drop()) {
        assert!(left_out, "a pawn-drop check left out unsaid in {sfen}");
        cov.pawn_drop_checks_left_out += 1;
    }
    // The flight-square filter of the mate-in-one test never throws away a mating check.
    let flights = movegen::KingFlights::of(pos);
    for &m in &ref_checks {
        pos.do_move(m);
        let mates = reference_legal(pos, false).is_empty();
        pos.undo_move(m);
        cov.mating_checks += mates as usize;
        if flights.may_be_covered_by(pos, m) {
            cov.checks_kept_by_flights += 1;
        } else {
            assert!(!mates, "{m} mates in {sfen} but the flight filter drops it");
            cov.checks_dropped_by_flights += 1;
        }
    }
    for &m in &reference {
        assert_eq!(
            movegen::gives_check(pos, m),
            ref_checks.contains(&m),
            "gives_check({m}) in {sfen}"
        );
    }

    let before = pos.clone();
    for &m in &reference {
        pos.do_move(m);
        assert_eq!(pos.key(), pos.compute_key(), "key after {m} in {sfen}");
        pos.undo_move(m);
        assert!(*pos == before, "do/undo of {m} did not restore {sfen}");
    }
    reference.into_iter().collect()
}

fn without_move_number(sfen: &str) -> &str {
    sfen.rsplit_once(' ').map_or(sfen, |(rest, _)| rest)
}

/// A sparse random position in the style of a tsume problem, or None if the draw was invalid.
fn random_sparse(rng: &mut ChaCha8Rng) -> Option<Position> {
    let mut board: [Option<(Color, PieceType)>; 81] = [None; 81];
    let edge_rank = if rng.random_bool(0.5) {
        0
    } else {
        rng.random_range(0..9)
    };
    let defender_king = Square::new(rng.random_range(0..9), edge_rank);
    board[defender_king.index()] = Some((Color::White, PieceType::King));
    if rng.random_bool(0.6) {
        let k = Square::from_index(rng.random_range(0..81));
        if board[k.index()].is_none() {
            board[k.index()] = Some((Color::Black, PieceType::King));
        }
    }
    let mut pool: Vec<PieceType> = Vec::new();
    for kind in PieceType::HAND {
        for _ in 0..kind.set_count() {
            pool.push(kind);
        }
    }
    let n = rng.random_range(1..10);
    let sliders_near_king = rng.random_bool(0.5);
    for _ in 0..n {
        let i = rng.random_range(0..pool.len());
        let kind = pool.swap_remove(i);
        let sq = if sliders_near_king && rng.random_bool(0.5) {
            // On a line through the defender's king, to create pins and discoveries.
            let df = rng.random_range(-1..=1);
            let dr = rng.random_range(-1..=1);
            let dist = rng.random_range(1..9);
            defender_king.offset(df * dist, dr * dist)?
        } else {
            Square::from_index(rng.random_range(0..81))
        };
        if board[sq.index()].is_some() {
            return None;
        }
        let color = if rng.random_bool(0.6) {
            Color::Black
        } else {
            Color::White
        };
        let kind = if kind.can_promote() && rng.random_bool(0.25) {
            kind.promoted()
        } else {
            kind
        };
        board[sq.index()] = Some((color, kind));
    }
    // Hands: the attacker gets a few pieces, the defender all the rest (the tsume convention),
    // or the reverse.
    let mut hands = [[0u8; 15]; 2];
    let attacker_share = rng.random_range(0..pool.len().min(8) + 1);
    for (i, kind) in pool.iter().enumerate() {
        let side = if i < attacker_share { 0 } else { 1 };
        hands[side][kind.index()] += 1;
    }
    if rng.random_bool(0.3) {
        hands.swap(0, 1);
    }
    let mut sfen = String::new();
    for rank in 0..9u8 {
        if rank > 0 {
            sfen.push('/');
        }
        let mut empty = 0;
        for file in (0..9u8).rev() {
            match board[Square::new(file, rank).index()] {
                None => empty += 1,
                Some((c, k)) => {
                    if empty > 0 {
                        sfen.push_str(&empty.to_string());
                        empty = 0;
                    }
                    sfen.push_str(&Piece::new(c, k).sfen());
                }
            }
        }
        if empty > 0 {
            sfen.push_str(&empty.to_string());
        }
    }
    sfen.push_str(if rng.random_bool(0.8) { " b " } else { " w " });
    let mut hand = String::new();
    for (side, counts) in hands.iter().enumerate() {
        for kind in PieceType::HAND_PRINT_ORDER {
            let n = counts[kind.index()];
            if n > 1 {
                hand.push_str(&n.to_string());
            }
            if n > 0 {
                let c = kind.sfen_char();
                hand.push(if side == 0 { c } else { c.to_ascii_lowercase() });
            }
        }
    }
    if hand.is_empty() {
        hand.push('-');
    }
    sfen.push_str(&hand);
    sfen.push_str(" 1");
    Position::from_sfen(&sfen).ok()
}

fn playouts(mut pos: Position, rng: &mut ChaCha8Rng, plies: usize, cov: &mut Coverage) {
    for _ in 0..plies {
        let moves = check_position(&mut pos, cov);
        if moves.is_empty() {
            break;
        }
        // Prefer checks half of the time: helpmate lines are made of them.
        let mut ch = MoveList::new();
        movegen::checks(&pos, &mut ch);
        let m = if !ch.is_empty() && rng.random_bool(0.5) {
            ch[rng.random_range(0..ch.len())]
        } else {
            moves[rng.random_range(0..moves.len())]
        };
        pos.do_move(m);
    }
}

#[test]
fn generators_match_reference_from_start_position() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut cov = Coverage::default();
    while cov.positions < 40_000 {
        playouts(Position::startpos(), &mut rng, 160, &mut cov);
    }
    eprintln!("{cov:?}");
    assert!(
        cov.in_check > 1000 && cov.discovered_checks > 100,
        "{cov:?}"
    );
}

#[test]
fn generators_match_reference_from_sparse_positions() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let mut cov = Coverage::default();
    while cov.positions < 60_000 {
        if let Some(pos) = random_sparse(&mut rng) {
            playouts(pos, &mut rng, 40, &mut cov);
        }
    }
    eprintln!("{cov:?}");
    assert!(
        cov.in_check > 5000
            && cov.double_check > 10
            && cov.pawn_drop_mates_excluded > 10
            && cov.discovered_checks > 500
            && cov.checkmates > 50
            && cov.no_king_for_mover > 1000
            && cov.mating_checks > 100
            && cov.checks_dropped_by_flights > 1000
            && cov.pawn_drop_checks_left_out > 100,
        "{cov:?}"
    );
}
