//! Legal move generation: all moves, checking moves and check evasions.
//!
//! Every generator produces only legal moves (own king never left in check, no double pawns,
//! no piece left without a future move, no pawn-drop mate), each move exactly once.

use super::attacks::*;
use super::bitboard::Bitboard;
use super::conditions::{Captures, PawnDropMate, Plain, Rules};
use super::position::{CheckInfo, Position};
use super::types::{Color, Move, PieceType, Square};
use std::cell::Cell;

/// The most legal moves any shogi position has is 593.
pub const MAX_MOVES: usize = 600;

/// A fixed-capacity move list that lives on the stack.
#[derive(Clone)]
pub struct MoveList {
    moves: [Move; MAX_MOVES],
    len: usize,
}

impl Default for MoveList {
    fn default() -> Self {
        MoveList::new()
    }
}

impl MoveList {
    #[inline]
    pub fn new() -> MoveList {
        MoveList {
            moves: [Move::NULL; MAX_MOVES],
            len: 0,
        }
    }

    #[inline]
    pub fn push(&mut self, m: Move) {
        debug_assert!(self.len < MAX_MOVES);
        self.moves[self.len] = m;
        self.len += 1;
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
    }

    #[inline]
    pub fn as_slice(&self) -> &[Move] {
        &self.moves[..self.len]
    }

    pub fn contains(&self, m: Move) -> bool {
        self.as_slice().contains(&m)
    }

    /// Keeps the moves for which `keep` holds, preserving order.
    pub fn retain(&mut self, mut keep: impl FnMut(Move) -> bool) {
        let mut n = 0;
        for i in 0..self.len {
            let m = self.moves[i];
            if keep(m) {
                self.moves[n] = m;
                n += 1;
            }
        }
        self.len = n;
    }
}

impl std::ops::Deref for MoveList {
    type Target = [Move];
    fn deref(&self) -> &[Move] {
        self.as_slice()
    }
}

/// Pushes the promoting and/or non-promoting forms of the moves of a `kind` piece from `from`
/// to each of `dests` that are legal (promotion when `from` or `to` is in the zone; no
/// non-promotion onto a square where the piece could never move again).
#[inline(always)]
fn push_board_moves(
    list: &mut MoveList,
    us: Color,
    kind: PieceType,
    from: Square,
    dests: Bitboard,
) {
    if kind.can_promote() {
        let zone = promotion_zone(us);
        let promoting = if zone.has(from) { dests } else { dests & zone };
        for to in promoting {
            list.push(Move::normal(from, to, true));
        }
        for to in dests & legal_ranks(us, kind) {
            list.push(Move::normal(from, to, false));
        }
    } else {
        for to in dests {
            list.push(Move::normal(from, to, false));
        }
    }
}

/// Shared per-node data for the generators.
struct Ctx<'a> {
    pos: &'a Position,
    us: Color,
    occ: Bitboard,
    own: Bitboard,
    /// Our king, if any.
    king: Option<Square>,
    /// Our pieces pinned to our king, found when a move is first tested against them: in most
    /// positions the breadth-first pass tests for checks no piece could check at all (they are
    /// dead), and then the pins are never looked for.
    pinned: Cell<Option<Bitboard>>,
}

impl<'a> Ctx<'a> {
    #[inline]
    fn new(pos: &'a Position) -> Ctx<'a> {
        let us = pos.side_to_move();
        Ctx {
            pos,
            us,
            occ: pos.occupied(),
            own: pos.pieces_of(us),
            king: pos.king(us),
            pinned: Cell::new(None),
        }
    }

    #[inline]
    fn pinned(&self) -> Bitboard {
        match self.pinned.get() {
            Some(pinned) => pinned,
            None => {
                let pinned = self.pos.pinned(self.us);
                self.pinned.set(Some(pinned));
                pinned
            }
        }
    }

    /// Destinations a non-king piece on `from` may use without exposing our king.
    #[inline]
    fn pin_mask(&self, from: Square) -> Bitboard {
        match self.king {
            Some(k) if self.pinned().has(from) => line(k, from),
            _ => Bitboard::ALL,
        }
    }
}

/// Legal king destinations within `targets`.
#[inline]
fn push_king_moves(ctx: &Ctx, king: Square, targets: Bitboard, list: &mut MoveList) {
    let pos = ctx.pos;
    let them = !ctx.us;
    let occ = ctx.occ ^ Bitboard::from_square(king);
    let dests = king_attacks(king) & targets & !ctx.own;
    if dests.is_empty() {
        return;
    }
    for to in pos.piece_sets(them).unattacked_next_to(king, dests, occ) {
        list.push(Move::normal(king, to, false));
    }
}

/// All non-king board moves to squares in `targets`, of the pieces among `movers` (which must
/// hold every piece that reaches a target: the others have no such move anyway).
#[inline]
fn push_piece_moves(ctx: &Ctx, targets: Bitboard, movers: Bitboard, list: &mut MoveList) {
    let pos = ctx.pos;
    use PieceType::{Bishop, Dragon, Gold, Horse, Knight, Lance, Pawn, Rook, Silver};
    let targets = targets & !ctx.own;
    let own = |kind| pos.pieces(ctx.us, kind) & movers;
    push_moves_of(ctx, Pawn, own(Pawn), targets, list);
    push_moves_of(ctx, Lance, own(Lance), targets, list);
    push_moves_of(ctx, Knight, own(Knight), targets, list);
    push_moves_of(ctx, Silver, own(Silver), targets, list);
    // The four promoted kinds move exactly like a gold.
    push_moves_of(
        ctx,
        Gold,
        pos.gold_movers() & ctx.own & movers,
        targets,
        list,
    );
    push_moves_of(ctx, Bishop, own(Bishop), targets, list);
    push_moves_of(ctx, Rook, own(Rook), targets, list);
    push_moves_of(ctx, Horse, own(Horse), targets, list);
    push_moves_of(ctx, Dragon, own(Dragon), targets, list);
}

/// The moves of the `kind` pieces on `from_squares` to `targets` (a constant `kind` at each
/// call, so the attack lookup is resolved at compile time).
#[inline(always)]
fn push_moves_of(
    ctx: &Ctx,
    kind: PieceType,
    from_squares: Bitboard,
    targets: Bitboard,
    list: &mut MoveList,
) {
    for from in from_squares {
        let dests = attacks(ctx.us, kind, from, ctx.occ) & targets & ctx.pin_mask(from);
        push_board_moves(list, ctx.us, kind, from, dests);
    }
}

/// Squares where `us` may not drop a pawn because of the two-pawn rule.
#[inline]
fn pawn_files(pos: &Position, us: Color) -> Bitboard {
    fill_files(pos.pieces(us, PieceType::Pawn))
}

/// Drops of every kind in hand onto the empty squares of `targets(kind)`.
#[inline]
fn push_drops<R: Rules>(ctx: &Ctx, targets: impl Fn(PieceType) -> Bitboard, list: &mut MoveList) {
    let pos = ctx.pos;
    let us = ctx.us;
    let hand = pos.hand(us);
    if hand.is_empty() {
        return;
    }
    for kind in PieceType::HAND {
        if !hand.has(kind) {
            continue;
        }
        let mut dests = targets(kind) & !ctx.occ & legal_ranks(us, kind);
        if kind == PieceType::Pawn {
            dests &= !pawn_files(pos, us);
        }
        for to in dests {
            if kind == PieceType::Pawn
                && R::PAWN_DROP_MATE == PawnDropMate::Illegal
                && is_pawn_drop_mate(pos, us, to)
            {
                continue;
            }
            list.push(Move::drop(kind, to));
        }
    }
}

/// True when dropping a pawn of `us` on `to` would checkmate: an illegal pawn-drop mate.
pub fn is_pawn_drop_mate(pos: &Position, us: Color, to: Square) -> bool {
    let them = !us;
    let Some(ksq) = pos.king(them) else {
        return false;
    };
    if !pawn_attacks(us, to).has(ksq) {
        return false; // the pawn does not even give check
    }
    let occ_after = pos.occupied() | Bitboard::from_square(to);
    // Can the king take the pawn or step away?
    let king_occ = occ_after ^ Bitboard::from_square(ksq);
    for sq in king_attacks(ksq) & !pos.pieces_of(them) {
        if !pos.is_attacked(us, sq, king_occ) {
            return false;
        }
    }
    // Can another defender take the pawn without exposing the king?
    let takers = pos.attackers_to(them, to, occ_after) & !pos.pieces(them, PieceType::King);
    for from in takers {
        let occ = occ_after ^ Bitboard::from_square(from);
        let pawn = Bitboard::from_square(to);
        if (pos.attackers_to(us, ksq, occ) & !pawn).is_empty() {
            return false;
        }
    }
    true
}

/// All legal moves.
pub fn legal(pos: &Position, list: &mut MoveList) {
    legal_under::<Plain>(pos, list)
}

/// All legal moves under the rules `R`.
pub fn legal_under<R: Rules>(pos: &Position, list: &mut MoveList) {
    if pos.in_check() {
        evasions_under::<R>(pos, list);
        return;
    }
    let ctx = Ctx::new(pos);
    push_piece_moves(&ctx, Bitboard::ALL, Bitboard::ALL, list);
    if let Some(k) = ctx.king {
        push_king_moves(&ctx, k, Bitboard::ALL, list);
    }
    push_drops::<R>(&ctx, |_| Bitboard::ALL, list);
}

/// All legal moves when the side to move is in check.
pub fn evasions(pos: &Position, list: &mut MoveList) {
    evasions_under::<Plain>(pos, list)
}

/// Up to this many squares to capture or interpose on, evasions find their movers square by
/// square.
const EVASION_TARGETS_BY_SQUARE: u32 = 2;

/// All legal moves under the rules `R` when the side to move is in check.
pub fn evasions_under<R: Rules>(pos: &Position, list: &mut MoveList) {
    debug_assert!(pos.in_check());
    let ctx = Ctx::new(pos);
    let king = ctx.king.expect("in check implies a king");
    push_king_moves(&ctx, king, Bitboard::ALL, list);
    let checkers = pos.checkers();
    if checkers.has_many() {
        return;
    }
    let checker = checkers.lsb();
    let block = between(king, checker);
    // Most checks in a helpmate touch the king or come from next to it: one square to answer
    // on, which a few pieces reach. Finding those from the square costs one look-up a kind
    // of attacker instead of one a piece (the order of the moves stays the generator's).
    let targets = (block | checkers) & !ctx.own;
    let movers = if targets.count() <= EVASION_TARGETS_BY_SQUARE {
        targets.iter().fold(Bitboard::EMPTY, |movers, to| {
            movers | pos.attackers_to(ctx.us, to, ctx.occ)
        })
    } else {
        Bitboard::ALL
    };
    push_piece_moves(&ctx, targets, movers, list);
    push_drops::<R>(&ctx, |_| block, list);
}

/// Where the opponent's king could still run, for a quick "can this check mate?" filter: up to
/// two squares next to it that hold none of its own pieces and that the side to move does not
/// attack (the king taken off the board, so a slider's ray beyond it counts), and the side to
/// move's pieces whose leaving might open a slider's line onto one of them.
#[derive(Clone, Debug)]
pub struct KingFlights {
    squares: Bitboard,
    /// Pieces standing between one of our sliders and some flight square.
    discoverers: Bitboard,
}

impl KingFlights {
    /// The flights of the opponent's king (none when it has no king).
    pub fn of(pos: &Position) -> KingFlights {
        let us = pos.side_to_move();
        let them = !us;
        let Some(king) = pos.king(them) else {
            return KingFlights {
                squares: Bitboard::EMPTY,
                discoverers: Bitboard::EMPTY,
            };
        };
        let occ = pos.occupied() ^ Bitboard::from_square(king);
        let mut squares = Bitboard::EMPTY;
        let mut discoverers = Bitboard::EMPTY;
        for sq in king_attacks(king) & !pos.pieces_of(them) {
            if !pos.is_attacked(us, sq, occ) {
                squares.set(sq);
                discoverers |= pos.blockers_given(sq, us, occ) & pos.pieces_of(us);
                // Two flights already rule out most checks; finding every one costs more
                // than the few further checks it would rule out.
                if squares.has_many() {
                    break;
                }
            }
        }
        KingFlights {
            squares,
            discoverers,
        }
    }

    /// False when `m` (a legal move of the side to move) certainly leaves the king a flight
    /// square, so it cannot mate: a square the moved piece does not reach from its new square
    /// (on an empty board) and no line opened by the move can reach. True means "maybe".
    #[inline]
    pub fn may_be_covered_by(&self, pos: &Position, m: Move) -> bool {
        if self.squares.is_empty() {
            return true;
        }
        let us = pos.side_to_move();
        let to = m.to();
        let kind = if m.is_drop() {
            m.dropped()
        } else if self.discoverers.has(m.from()) {
            // The move may open a line: no quick answer.
            return true;
        } else {
            let kind = pos.piece_at(m.from()).expect("a piece to move").kind();
            if m.is_promotion() {
                kind.promoted()
            } else {
                kind
            }
        };
        let reach = pseudo_attacks(us, kind, to) | Bitboard::from_square(to);
        (self.squares & !reach).is_empty()
    }
}

/// True when the side to move, in check, has at least one legal move; stops at the first.
pub fn has_evasion(pos: &Position) -> bool {
    has_evasion_under::<Plain>(pos)
}

/// True when the side to move, in check, has at least one legal move under the rules `R`.
pub fn has_evasion_under<R: Rules>(pos: &Position) -> bool {
    debug_assert!(pos.in_check());
    let us = pos.side_to_move();
    let them = !us;
    let king = pos.king(us).expect("in check implies a king");
    let own = pos.pieces_of(us);
    let occ = pos.occupied();
    let king_occ = occ ^ Bitboard::from_square(king);
    for to in king_attacks(king) & !own {
        if !pos.is_attacked(them, to, king_occ) {
            return true;
        }
    }
    let checkers = pos.checkers();
    if checkers.has_many() {
        return false;
    }
    let checker = checkers.lsb();
    let block = between(king, checker);
    let pinned = pos.pinned(us);
    // Captures of the checker and interpositions by pieces: any such move has at least one
    // legal promotion form, so reachability suffices.
    let targets = block | checkers;
    let movers = own & !pos.pieces_of_kind(PieceType::King);
    for to in targets {
        let mut candidates = pos.attackers_to(us, to, occ) & movers;
        while let Some(from) = candidates.pop() {
            if pinned.has(from) && !line(king, from).has(to) {
                continue;
            }
            return true;
        }
    }
    // Interposing drops.
    let hand = pos.hand(us);
    if block.is_nonempty() && !hand.is_empty() {
        for kind in PieceType::HAND {
            if !hand.has(kind) {
                continue;
            }
            let mut dests = block & legal_ranks(us, kind);
            if kind == PieceType::Pawn {
                dests &= !pawn_files(pos, us);
                // A pawn interposed between king and checker never checks the checker's king
                // unless adjacent to it; test precisely.
                let mate_allowed = R::PAWN_DROP_MATE == PawnDropMate::Allowed;
                if dests
                    .iter()
                    .any(|to| mate_allowed || !is_pawn_drop_mate(pos, us, to))
                {
                    return true;
                }
            } else if dests.is_nonempty() {
                return true;
            }
        }
    }
    false
}

/// True when the side to move is checkmated.
pub fn is_checkmate(pos: &Position) -> bool {
    is_checkmate_under::<Plain>(pos)
}

/// True when the side to move is checkmated under the rules `R`.
pub fn is_checkmate_under<R: Rules>(pos: &Position) -> bool {
    pos.in_check() && !has_evasion_under::<R>(pos)
}

/// Does `m` (legal in `pos`) give check? `ci` must be `pos.check_info()`.
#[inline]
pub fn gives_check_with(pos: &Position, ci: &CheckInfo, m: Move) -> bool {
    let to = m.to();
    if m.is_drop() {
        return ci.squares[m.dropped().index()].has(to);
    }
    let from = m.from();
    let kind = pos.piece_at(from).expect("move origin").kind();
    let kind = if m.is_promotion() {
        kind.promoted()
    } else {
        kind
    };
    (kind != PieceType::King && ci.squares[kind.index()].has(to))
        || (ci.discoverers.has(from) && !line(ci.king, from).has(to))
}

/// Does `m` (legal in `pos`) give check?
pub fn gives_check(pos: &Position, m: Move) -> bool {
    pos.check_info()
        .as_ref()
        .is_some_and(|ci| gives_check_with(pos, ci, m))
}

/// The checking moves of the `kind` pieces on `from_squares` (a constant `kind` at each call,
/// so the attack lookup is resolved at compile time).
#[inline(always)]
fn push_checks_of(
    ctx: &Ctx,
    ci: &CheckInfo,
    kind: PieceType,
    from_squares: Bitboard,
    list: &mut MoveList,
) {
    let us = ctx.us;
    let zone = promotion_zone(us);
    for from in from_squares {
        let reach = attacks(us, kind, from, ctx.occ) & !ctx.own;
        // Where a plain move of the piece checks (to a rank it may stay on) and where a
        // promotion does (where the zone allows one).
        let (plain, promoting) = if kind.can_promote() {
            let promotable = if zone.has(from) { Bitboard::ALL } else { zone };
            (
                ci.squares[kind.index()] & legal_ranks(us, kind),
                ci.squares[kind.promoted().index()] & promotable,
            )
        } else {
            (ci.squares[kind.index()], Bitboard::EMPTY)
        };
        // Whether any of these moves could check, before a pin is looked for: exactly the
        // destinations pushed below but for the pin, so that a piece with none never makes
        // the generator look for pins, which the dead positions of a breadth-first pass
        // mostly do not need (wfp-56-12 2571 at one thread, under cachegrind: 0.9% fewer
        // instructions than when a promotion counted wherever the piece went).
        let checking = if ci.discoverers.has(from) {
            reach
        } else {
            reach & (plain | promoting)
        };
        if checking.is_empty() {
            continue;
        }
        let dests = reach & ctx.pin_mask(from);
        let mut direct = dests;
        if ci.discoverers.has(from) {
            // Leaving the line uncovers a check by the slider behind: every such move checks.
            push_board_moves(list, us, kind, from, dests & !line(ci.king, from));
            direct &= line(ci.king, from);
        }
        for to in direct & plain {
            list.push(Move::normal(from, to, false));
        }
        for to in direct & promoting {
            list.push(Move::normal(from, to, true));
        }
    }
}

/// All legal moves that give check to the opponent's king (none if there is no such king).
pub fn checks(pos: &Position, list: &mut MoveList) {
    checks_under::<Plain>(pos, list)
}

/// All legal moves under the rules `R` that give check to the opponent's king.
pub fn checks_under<R: Rules>(pos: &Position, list: &mut MoveList) {
    push_checks::<R>(pos, true, list);
}

/// The checks of [`checks_under`] that may mate at once: all of them but pawn drops where a
/// pawn-drop mate is illegal (such a drop either leaves an evasion or is illegal). For the last
/// ply of a line, where only a mate counts: a pawn-drop check cost its own mate test in the
/// generator and then a second one (by the defender's king moves) in the search. Returns
/// whether a pawn-drop check was left out (or may have been: its legality is not decided).
pub fn checks_that_may_mate_under<R: Rules>(pos: &Position, list: &mut MoveList) -> bool {
    let pawn_drops = R::PAWN_DROP_MATE == PawnDropMate::Allowed;
    push_checks::<R>(pos, pawn_drops, list);
    !pawn_drops && may_check_by_pawn_drop(pos)
}

/// Whether the side to move has a pawn in hand and an empty square to drop it on, checking,
/// not doubling its pawns (the drop may still be an illegal mate).
fn may_check_by_pawn_drop(pos: &Position) -> bool {
    let us = pos.side_to_move();
    let Some(king) = pos.king(!us) else {
        return false;
    };
    let squares = pawn_attacks(!us, king) & !pos.occupied() & legal_ranks(us, PieceType::Pawn);
    pos.hand(us).has(PieceType::Pawn) && !(squares & !pawn_files(pos, us)).is_empty()
}

/// The legal checks, pawn drops among them if `pawn_drops`.
#[inline(always)]
fn push_checks<R: Rules>(pos: &Position, pawn_drops: bool, list: &mut MoveList) {
    // Bound by reference: moving the 272-byte value out of the `Option` was a `memcpy` call
    // on every generation (2% of a breadth-first pass).
    let check_info = pos.check_info();
    let Some(ci) = &check_info else {
        return;
    };
    if pos.in_check() {
        // Rare in helpmates (the defender's last move checked the attacker's king): answer the
        // check and keep the answers that check back.
        let mut all = MoveList::new();
        evasions_under::<R>(pos, &mut all);
        for &m in all.iter() {
            if (pawn_drops || !m.is_pawn_drop()) && gives_check_with(pos, ci, m) {
                list.push(m);
            }
        }
        return;
    }
    use PieceType::{Bishop, Dragon, Gold, Horse, Knight, Lance, Pawn, Rook, Silver};
    let ctx = Ctx::new(pos);
    let us = ctx.us;
    let own = |kind| pos.pieces(us, kind);
    // A step piece far from the king can only check by discovery.
    let near = |kind| check_candidates(us, kind, ci.king) | ci.discoverers;
    push_checks_of(&ctx, ci, Pawn, own(Pawn) & near(Pawn), list);
    push_checks_of(&ctx, ci, Lance, own(Lance), list);
    push_checks_of(&ctx, ci, Knight, own(Knight) & near(Knight), list);
    push_checks_of(&ctx, ci, Silver, own(Silver) & near(Silver), list);
    // The four promoted kinds move (and check) exactly like a gold.
    let golds = pos.gold_movers() & ctx.own;
    push_checks_of(&ctx, ci, Gold, golds & near(Gold), list);
    push_checks_of(&ctx, ci, Bishop, own(Bishop), list);
    push_checks_of(&ctx, ci, Rook, own(Rook), list);
    push_checks_of(&ctx, ci, Horse, own(Horse), list);
    push_checks_of(&ctx, ci, Dragon, own(Dragon), list);
    // The king can only check by discovery.
    if let Some(k) = ctx.king {
        if ci.discoverers.has(k) {
            push_king_moves(&ctx, k, !line(ci.king, k), list);
        }
    }
    push_drops::<R>(
        &ctx,
        |kind| match kind {
            Pawn if !pawn_drops => Bitboard::EMPTY,
            _ => ci.squares[kind.index()],
        },
        list,
    );
}

/// Narrows `moves`, the moves the side to move in `pos` may otherwise play (for the attacker its
/// checks, for the defender its legal moves), to those `captures` allows: under 強欲 the
/// captures if there are any, under 禁欲 the other moves if there are any. Never empties a list
/// that was not empty, so a mate is decided as without the rule.
pub fn keep_allowed_captures(pos: &Position, captures: Captures, moves: &mut MoveList) {
    let is_capture = |m: Move| !m.is_drop() && pos.piece_at(m.to()).is_some();
    match captures {
        Captures::Free => {}
        Captures::Greedy => {
            if moves.iter().any(|&m| is_capture(m)) {
                moves.retain(is_capture);
            }
        }
        Captures::Ascetic => {
            if moves.iter().any(|&m| !is_capture(m)) {
                moves.retain(|m| !is_capture(m));
            }
        }
    }
}

/// Full legality test of an arbitrary move (for input; not for the search's hot path).
pub fn is_legal_move(pos: &Position, m: Move) -> bool {
    let mut list = MoveList::new();
    legal(pos, &mut list);
    list.contains(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The evasions as they were generated before their movers were found square by square:
    /// every piece's moves to the targets.
    fn evasions_piece_by_piece(pos: &Position) -> MoveList {
        let mut list = MoveList::new();
        let ctx = Ctx::new(pos);
        let king = ctx.king.expect("in check");
        push_king_moves(&ctx, king, Bitboard::ALL, &mut list);
        let checkers = pos.checkers();
        if !checkers.has_many() {
            let block = between(king, checkers.lsb());
            push_piece_moves(&ctx, block | checkers, Bitboard::ALL, &mut list);
            push_drops::<Plain>(&ctx, |_| block, &mut list);
        }
        list
    }

    /// Links name a move by its place in the generator's list, so finding the movers from the
    /// squares must give the same moves in the same order. Helpmate-like walks (a random check,
    /// a random evasion) from crowded problems, comparing every evasion list met.
    #[test]
    fn evasions_keep_their_order_whichever_way_movers_are_found() {
        use rand::{Rng, SeedableRng};
        let starts = [
            "gpnS+P2nl/pk+p6/1lpgsp1G1/Pb1l4+R/2gl5/3s1N2K/9/5PNP+B/6s1r b 7P2p 1",
            "5bllb/SGG1g1+R+RP/1Lns1sK1s/1pp1p+p2g/3p1+p3/5k2+p/1P4n2/P3+pp+plN/2P1P+p2+p b NP 1",
            "9/6GGr/S1ssggN1b/pL+p+p5/1+p4P1K/4L1+P2/+p+Ppllppp+B/+p4P3/+pk+n1+n1+nsr b 3P 1",
            "4k4/9/4P4/9/9/9/9/9/4K4 b 2R2B4G4S4N4L17P 1",
        ];
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(65);
        let (mut compared, mut one_target, mut many_targets) = (0, 0, 0);
        for sfen in starts {
            for _ in 0..300 {
                let mut pos = Position::from_sfen(sfen).unwrap();
                for _ in 0..40 {
                    let mut checks = MoveList::new();
                    super::checks(&pos, &mut checks);
                    if checks.is_empty() {
                        break;
                    }
                    pos.do_move(checks.as_slice()[rng.random_range(0..checks.len())]);
                    let mut evasions = MoveList::new();
                    super::evasions(&pos, &mut evasions);
                    assert_eq!(
                        evasions.as_slice(),
                        evasions_piece_by_piece(&pos).as_slice(),
                        "{}",
                        pos.to_sfen()
                    );
                    compared += 1;
                    let king = pos.king(pos.side_to_move()).unwrap();
                    let checkers = pos.checkers();
                    if !checkers.has_many() {
                        let targets = (between(king, checkers.lsb()) | checkers)
                            & !pos.pieces_of(pos.side_to_move());
                        if targets.count() <= EVASION_TARGETS_BY_SQUARE {
                            one_target += 1;
                        } else {
                            many_targets += 1;
                        }
                    }
                    if evasions.is_empty() {
                        break;
                    }
                    pos.do_move(evasions.as_slice()[rng.random_range(0..evasions.len())]);
                }
            }
        }
        assert!(
            compared > 5_000 && one_target > 1_000 && many_targets > 100,
            "{compared} {one_target} {many_targets}"
        );
    }

    #[test]
    fn greed_keeps_the_captures_and_asceticism_the_others() {
        // rules.md §9: after G*5e the king must take the gold under 強欲.
        let mut pos = Position::from_sfen("9/2+p2+P3/2p6/3nk4/3p1L1B1/9/9/9/9 b 2G 1").unwrap();
        pos.do_move(pos.parse_move("G*5e").unwrap());
        let mut all = MoveList::new();
        legal(&pos, &mut all);
        let capture = pos.parse_move("5d5e").unwrap();
        assert!(all.len() > 1 && all.as_slice().contains(&capture));
        let mut greedy = all.clone();
        keep_allowed_captures(&pos, Captures::Greedy, &mut greedy);
        assert_eq!(greedy.as_slice(), [capture]);
        let mut ascetic = all.clone();
        keep_allowed_captures(&pos, Captures::Ascetic, &mut ascetic);
        assert_eq!(ascetic.len(), all.len() - 1);
        assert!(!ascetic.as_slice().contains(&capture));
        let mut free = all.clone();
        keep_allowed_captures(&pos, Captures::Free, &mut free);
        assert_eq!(free.as_slice(), all.as_slice());
        // Only captures: 禁欲 keeps them all (a list is never emptied).
        let mut only = MoveList::new();
        only.push(capture);
        keep_allowed_captures(&pos, Captures::Ascetic, &mut only);
        assert_eq!(only.as_slice(), [capture]);
    }
}
