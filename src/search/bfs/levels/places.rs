//! A line's moves named again from its links (see `Link`), which keep where each check and
//! evasion stood in the lists the rules generated, not the moves: played from the root, each
//! position's checks and each check's evasions are generated again, the same lists in the same
//! order, and the places pick the moves out of them.

use crate::shogi::movegen::{MoveList, MAX_MOVES};
use crate::shogi::{Move, Position, RuleSet};

/// A move's index in its generated list, as a link keeps it.
#[inline]
pub(crate) fn place_of(index: usize) -> u16 {
    // A list holds at most `MAX_MOVES` moves.
    const _: () = assert!(MAX_MOVES <= 1 << u16::BITS);
    index as u16
}

/// The line from `root` (attacker to move) through the levels whose links gave `places` (the
/// check's and the evasion's, root first), ended by `last` (the mating moves, as found):
/// `None` if a place lies past its list (links that are not this root's under these rules).
pub(crate) fn line_of(
    root: &Position,
    rules: RuleSet,
    places: impl Iterator<Item = (u16, u16)>,
    last: &[Move],
) -> Option<Vec<Move>> {
    let mut pos = root.clone();
    rules.adopt(&mut pos);
    let mut list = MoveList::new();
    let mut line = Vec::new();
    // Plays the move at `place` of the list `generate` makes at `pos`.
    let mut play = |pos: &mut Position, generate: fn(RuleSet, &Position, &mut MoveList), place| {
        list.clear();
        generate(rules, pos, &mut list);
        let m = *list.as_slice().get(usize::from(place))?;
        pos.do_move(m);
        line.push(m);
        Some(())
    };
    for (check, evasion) in places {
        play(&mut pos, RuleSet::checks, check)?;
        play(&mut pos, RuleSet::evasions, evasion)?;
    }
    line.extend_from_slice(last);
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shogi::conditions::{CaptureRule, PieceMoves};
    use crate::shogi::Conditions;

    /// The lists of moves the rules generate at `pos`: its checks, or with `evading` its
    /// evasions.
    fn listed(pos: &Position, rules: RuleSet, evading: bool) -> Vec<Move> {
        let mut list = MoveList::new();
        match evading {
            true => rules.evasions(pos, &mut list),
            false => rules.checks(pos, &mut list),
        }
        list.as_slice().to_vec()
    }

    /// Walks that pick checks and evasions at random name the same moves again from their
    /// places, under plain rules and conditions that move captured pieces or change how pieces
    /// move; the lists are the same at a position reached by moves and at its packed copy
    /// unpacked (as the pass generates them); a place past its list names nothing.
    #[test]
    fn places_name_the_moves_they_were_taken_from() {
        let plain = RuleSet::PLAIN;
        let circe = RuleSet::new(Conditions {
            capture_rule: CaptureRule::Circe,
            ..Conditions::NONE
        });
        let annan = RuleSet::new(Conditions {
            piece_moves: PieceMoves::Annan,
            ..Conditions::NONE
        });
        let roots = [
            "ln5nl/4k4/p1p1ppp1p/9/9/9/P1P1PPP1P/9/LN2K2NL b 2R2B2G2S2p 1",
            "4k4/9/4P4/9/9/9/9/9/4K4 b 2G2S2N2L 1",
            "3sks3/9/4+B4/9/9/9/9/9/9 b 2RB4G2S4N4L9P 1",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut pick = |len: usize| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) as usize % len
        };
        let mut walks = 0;
        for sfen in roots {
            for rules in [plain, circe, annan] {
                let mut root = Position::from_sfen(sfen).unwrap();
                rules.adopt(&mut root);
                for _ in 0..20 {
                    let mut pos = root.clone();
                    let (mut places, mut moves) = (Vec::new(), Vec::new());
                    'walk: for _ in 0..12 {
                        let mut place = [0u16; 2];
                        for (side, evading) in [false, true].into_iter().enumerate() {
                            let list = listed(&pos, rules, evading);
                            let mut unpacked = Position::from_sfen(sfen).unwrap();
                            rules.adopt(&mut unpacked);
                            unpacked.unpack_from(&pos.pack());
                            assert_eq!(listed(&unpacked, rules, evading), list);
                            if list.is_empty() {
                                break 'walk;
                            }
                            let at = pick(list.len());
                            place[side] = place_of(at);
                            pos.do_move(list[at]);
                            moves.push(list[at]);
                        }
                        places.push((place[0], place[1]));
                    }
                    // (A walk that ended between a check and its evasions keeps the check
                    // as a last move.)
                    let last = &moves[2 * places.len()..];
                    let line = line_of(&root, rules, places.iter().copied(), last);
                    assert_eq!(line.as_deref(), Some(&moves[..]), "{sfen}");
                    walks += usize::from(places.len() >= 3);
                    if !places.is_empty() {
                        let past = listed(&root, rules, false).len() as u16;
                        let wrong = [(past, 0)]
                            .into_iter()
                            .chain(places.iter().copied().skip(1));
                        assert_eq!(line_of(&root, rules, wrong, &[]), None);
                    }
                }
            }
        }
        assert!(walks >= 60, "only {walks} walks of three levels or more");
    }
}
