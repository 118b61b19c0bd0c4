//! HS# (協力自玉詰) and 受先 (the defender first) against a deliberately simple reference: the
//! number of lines of exactly `r` plies that end in the goal, computed by walking every legal
//! move (attacker moves kept when they give check), with a memo of (position, plies left). No
//! table of bounds, no repetition handling (a shortest line never repeats), no move ordering,
//! none of the engine's generators but `legal`. The shortest length is the least `r` with a line,
//! and the count is that number of lines. On random positions with both kings, the engine must
//! give the same length (or, within the plies searched, none) and the same count.

mod common;

use kyozume::search::{Limits, Outcome, PassTuning, Solver, Strategy};
use kyozume::shogi::movegen::{self, MoveList};
use kyozume::shogi::stipulation::verify_solution;
use kyozume::shogi::{Color, Conditions, Goal, PieceType, Position, Square, Stipulation};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;
use std::sync::atomic::AtomicBool;

/// The reference: lines of exactly `r` plies from `pos` that end in `goal`, the attacker being
/// `attacker` (capped at `CAP`; the comparison caps it again at the engine's `SOLUTION_LIMIT`).
struct Reference {
    goal: Goal,
    attacker: Color,
    memo: HashMap<(u128, u32), u64>,
    /// HS#: attacker checks met that mate the defender with plies left (dead ends).
    dead_ends: u64,
}

const CAP: u64 = 1_000_000;

/// The engine counts up to this many lines and reports the limit when there are more.
const SOLUTION_LIMIT: usize = 1000;

impl Reference {
    fn lines(&mut self, pos: &mut Position, r: u32) -> u64 {
        if r == 0 {
            return 0;
        }
        if let Some(&n) = self.memo.get(&(pos.key(), r)) {
            return n;
        }
        let mover = pos.side_to_move();
        let mut moves = MoveList::new();
        movegen::legal(pos, &mut moves);
        let mated_side = match self.goal {
            Goal::Helpmate => !self.attacker,
            Goal::Selfmate => self.attacker,
        };
        let mut n = 0u64;
        for &m in moves.iter() {
            if mover == self.attacker && !movegen::gives_check(pos, m) {
                continue;
            }
            pos.do_move(m);
            if r > 1
                && self.goal == Goal::Selfmate
                && mover == self.attacker
                && movegen::is_checkmate(pos)
            {
                self.dead_ends += 1;
            }
            if r == 1 {
                if pos.side_to_move() == mated_side && movegen::is_checkmate(pos) {
                    n += 1;
                }
            } else {
                n += self.lines(pos, r - 1);
            }
            pos.undo_move(m);
        }
        let n = n.min(CAP);
        self.memo.insert((pos.key(), r), n);
        n
    }

    /// The shortest length up to `max` plies and its number of lines.
    fn shortest(root: &Position, stipulation: Stipulation, max: u32) -> Option<(u32, u64)> {
        Reference::shortest_and_dead_ends(root, stipulation, max).0
    }

    /// `shortest`, and the HS# dead ends met on the way (see `dead_ends`).
    fn shortest_and_dead_ends(
        root: &Position,
        stipulation: Stipulation,
        max: u32,
    ) -> (Option<(u32, u64)>, u64) {
        let mut reference = Reference {
            goal: stipulation.goal,
            attacker: stipulation.attacker(root.side_to_move()),
            memo: HashMap::new(),
            dead_ends: 0,
        };
        let mut pos = root.clone();
        let found = (1..=max).find_map(|r| {
            let n = reference.lines(&mut pos, r);
            (n > 0).then_some((r, n))
        });
        (found, reference.dead_ends)
    }
}

/// A sparse random position with both kings: up to five other pieces, mostly around the king
/// of `mated` and mostly its opponent's, a few in each hand, the side to move `to_move`; None if
/// the draw is not a legal position.
fn random_position(rng: &mut ChaCha8Rng, to_move: Color, mated: Color) -> Option<Position> {
    let mut board: [Option<(Color, PieceType)>; 81] = [None; 81];
    let kinds = [
        PieceType::Pawn,
        PieceType::Lance,
        PieceType::Knight,
        PieceType::Silver,
        PieceType::Gold,
        PieceType::Bishop,
        PieceType::Rook,
    ];
    let (white_king, black_king);
    if mated == Color::Black && rng.random_bool(0.9) {
        // HS# wants the attacker's king within the defender's reach: a battery aimed at it (a
        // line piece behind the defender's king or another piece of its own), so that a reply to
        // a check that moves the front piece checks back, the commonest HS# mate.
        black_king = Square::new(rng.random_range(0..9), rng.random_range(6..9));
        let (df, dr, line_piece) = [
            (0, -1, PieceType::Rook),
            (0, -1, PieceType::Lance),
            (1, 0, PieceType::Rook),
            (-1, 0, PieceType::Rook),
            (1, -1, PieceType::Bishop),
            (-1, -1, PieceType::Bishop),
        ][rng.random_range(0..6)];
        let front = rng.random_range(2..5);
        let back = rng.random_range(front + 1..front + 4);
        let front_sq = black_king.offset(df * front, dr * front)?;
        let back_sq = black_king.offset(df * back, dr * back)?;
        board[back_sq.index()] = Some((Color::White, line_piece));
        if rng.random_bool(0.5) {
            white_king = front_sq;
        } else {
            white_king = Square::new(rng.random_range(0..9), rng.random_range(0..4));
            if board[white_king.index()].is_some() || white_king == front_sq {
                return None;
            }
            board[front_sq.index()] = Some((Color::White, kinds[rng.random_range(0..5)]));
        }
        // Most of the king's flights off the line taken by its own men.
        for (f, r) in [
            (-1, -1),
            (0, -1),
            (1, -1),
            (-1, 0),
            (1, 0),
            (-1, 1),
            (0, 1),
            (1, 1),
        ] {
            if (f, r) == (df, dr) || !rng.random_bool(0.6) {
                continue;
            }
            if let Some(sq) = black_king.offset(f, r) {
                if board[sq.index()].is_none() && sq != white_king {
                    let men = [PieceType::Pawn, PieceType::Silver, PieceType::Gold];
                    board[sq.index()] = Some((Color::Black, men[rng.random_range(0..3)]));
                }
            }
        }
    } else {
        white_king = Square::new(rng.random_range(0..9), rng.random_range(0..4));
        black_king = if rng.random_bool(0.5) {
            white_king.offset(rng.random_range(-2..=2), rng.random_range(2..=3))?
        } else {
            Square::new(rng.random_range(0..9), rng.random_range(4..9))
        };
    }
    board[white_king.index()] = Some((Color::White, PieceType::King));
    board[black_king.index()] = Some((Color::Black, PieceType::King));
    let (mated_king, other_king) = if mated == Color::White {
        (white_king, black_king)
    } else {
        (black_king, white_king)
    };
    for _ in 0..rng.random_range(1..6) {
        let near = if rng.random_bool(0.7) {
            mated_king
        } else {
            other_king
        };
        let sq = near.offset(rng.random_range(-2..=2), rng.random_range(-2..=2))?;
        if board[sq.index()].is_some() {
            return None;
        }
        let color = if rng.random_bool(0.65) { !mated } else { mated };
        let mut kind = kinds[rng.random_range(0..kinds.len())];
        if kind.can_promote() && rng.random_bool(0.2) {
            kind = kind.promoted();
        }
        board[sq.index()] = Some((color, kind));
    }
    let mut sfen = String::new();
    for rank in 0..9u8 {
        let mut empty = 0;
        for file in (0..9u8).rev() {
            match board[Square::new(file, rank).index()] {
                None => empty += 1,
                Some((color, kind)) => {
                    if empty > 0 {
                        sfen.push_str(&empty.to_string());
                        empty = 0;
                    }
                    let p = kyozume::shogi::Piece::new(color, kind);
                    sfen.push_str(&p.sfen());
                }
            }
        }
        if empty > 0 {
            sfen.push_str(&empty.to_string());
        }
        if rank < 8 {
            sfen.push('/');
        }
    }
    let hand_kinds = ["P", "L", "N", "S", "G", "B", "R"];
    let mut hand = String::new();
    for upper in [true, false] {
        // The mating side holds one piece more: mates by a drop are the commonest.
        let mating = (mated == Color::White) == upper;
        for _ in 0..rng.random_range(usize::from(mating)..3 + usize::from(mating)) {
            let k = hand_kinds[rng.random_range(0..hand_kinds.len())];
            hand.push_str(&if upper {
                k.to_string()
            } else {
                k.to_lowercase()
            });
        }
    }
    let hand = if hand.is_empty() {
        "-".to_string()
    } else {
        hand
    };
    let side = if to_move == Color::Black { "b" } else { "w" };
    Position::from_sfen(&format!("{sfen} {side} {hand} 1")).ok()
}

/// Whether some check by the side to move leads to a position where `found` holds (checks
/// taken from the legal moves, as the reference does).
fn some_check_leads_to(root: &Position, found: impl Fn(&Position) -> bool) -> bool {
    let mut pos = root.clone();
    let mut moves = MoveList::new();
    movegen::legal(&pos, &mut moves);
    moves.iter().any(|&m| {
        if !movegen::gives_check(&pos, m) {
            return false;
        }
        pos.do_move(m);
        let hit = found(&pos);
        pos.undo_move(m);
        hit
    })
}

/// Whether some check by the side to move has a reply that checks back.
fn check_then_check(root: &Position) -> bool {
    some_check_leads_to(root, |pos| {
        let mut replies = MoveList::new();
        movegen::legal(pos, &mut replies);
        replies.iter().any(|&r| movegen::gives_check(pos, r))
    })
}

/// Whether some check by the side to move mates at once.
fn mates_at_once(root: &Position) -> bool {
    some_check_leads_to(root, movegen::is_checkmate)
}

/// The engine's answer within `max` plies: the length and count, None if none is that short.
fn engine(
    solver: &mut Solver,
    root: &Position,
    (stipulation, strategy, threads): (Stipulation, Strategy, usize),
    max: u32,
) -> Option<(u32, u64)> {
    let limits = Limits {
        stipulation,
        strategy,
        threads,
        max_plies: Some(max),
        solution_limit: SOLUTION_LIMIT,
        ..Default::default()
    };
    let r = solver
        .solve(root, &limits, &AtomicBool::new(false), &mut |_| {})
        .unwrap();
    match r.outcome {
        Outcome::Mate(line) => {
            verify_solution(root, stipulation, &line)
                .unwrap_or_else(|e| panic!("{} {stipulation}: {e}", root.to_sfen()));
            let s = r.solutions.expect("counted");
            assert!(s.complete);
            for l in &s.lines {
                assert_eq!(l.len(), line.len());
                verify_solution(root, stipulation, l).unwrap();
            }
            Some((line.len() as u32, s.count as u64))
        }
        Outcome::NoMate => None,
        Outcome::NoMateWithin { max_plies } => {
            assert_eq!(max_plies, max, "{}", root.to_sfen());
            None
        }
        Outcome::Unknown { lower_bound } => {
            panic!("{}: stopped at {lower_bound}", root.to_sfen())
        }
    }
}

/// Solved positions, positions without a line within the plies searched, and the lengths seen.
#[derive(Debug, Default)]
struct Agreement {
    solved: usize,
    unsolved: usize,
    lengths: std::collections::BTreeSet<u32>,
    /// Roots where the attacker is in check (its answer must check too).
    attacker_in_check: usize,
    /// Roots where a check mates the defender at once.
    mate_at_once: usize,
    /// HS#: positions met where a check mates the defender before the line's end (dead ends).
    dead_ends: u64,
}

/// Checks `per` random positions of `stipulation` against the reference within `max` plies.
fn agree(
    solver: &mut Solver,
    rng: &mut ChaCha8Rng,
    stipulation: Stipulation,
    max: u32,
    per: usize,
) -> Agreement {
    let mut seen = Agreement::default();
    // The attacker is Black either way (the defender, White, moves first in 受先).
    let to_move = if stipulation.defender_first {
        Color::White
    } else {
        Color::Black
    };
    let mated = match stipulation.goal {
        Goal::Helpmate => Color::White,
        Goal::Selfmate => Color::Black,
    };
    while seen.solved + seen.unsolved < per {
        let Some(root) = random_position(rng, to_move, mated) else {
            continue;
        };
        if stipulation.check_position(&root).is_err() {
            continue;
        }
        // Most random HS# roots have no line at all; most kept ones have a defender reply that
        // checks the attacker after some check, some not.
        if stipulation.goal == Goal::Selfmate
            && !stipulation.defender_first
            && !check_then_check(&root)
            && rng.random_bool(0.8)
        {
            continue;
        }
        let (want, dead_ends) = Reference::shortest_and_dead_ends(&root, stipulation, max);
        let want = want.map(|(len, n)| (len, n.min(SOLUTION_LIMIT as u64)));
        seen.dead_ends += dead_ends;
        let got = engine(solver, &root, (stipulation, Strategy::Auto, 1), max);
        assert_eq!(got, want, "{} {stipulation}", root.to_sfen());
        if !stipulation.defender_first {
            // The breadth-first pass from the root, at one thread and at two in turn.
            let threads = 1 + (seen.solved + seen.unsolved) % 2;
            let setting = (stipulation, Strategy::BreadthFirst, threads);
            let got = engine(solver, &root, setting, max);
            assert_eq!(got, want, "{} {stipulation} breadth-first", root.to_sfen());
        }
        if !stipulation.defender_first {
            seen.attacker_in_check += usize::from(root.in_check());
            seen.mate_at_once += usize::from(mates_at_once(&root));
        }
        match want {
            Some((len, _)) => {
                seen.solved += 1;
                seen.lengths.insert(len);
            }
            None => seen.unsolved += 1,
        }
    }
    seen
}

const HS: Stipulation = Stipulation {
    goal: Goal::Selfmate,
    defender_first: false,
    conditions: Conditions::NONE,
};
const HS_FIRST: Stipulation = Stipulation {
    goal: Goal::Selfmate,
    defender_first: true,
    conditions: Conditions::NONE,
};
const H_FIRST: Stipulation = Stipulation {
    goal: Goal::Helpmate,
    defender_first: true,
    conditions: Conditions::NONE,
};

#[test]
fn hs_hs_defender_first_and_h_defender_first_agree_with_the_reference() {
    kyozume::search::with_search_stack(|| {
        let mut rng = ChaCha8Rng::seed_from_u64(40);
        let mut solver = Solver::new_lazy(32).unwrap();
        for (stipulation, max, least_solved) in [
            (HS, 6, 10),
            (HS_FIRST, 7, 20),
            (H_FIRST, 6, 20),
            (Stipulation::HELPMATE, 5, 20),
        ] {
            let seen = agree(&mut solver, &mut rng, stipulation, max, 110);
            eprintln!("{stipulation} within {max} plies: {seen:?}");
            // Enough with and without a solution, and of more than one length.
            assert!(
                seen.solved >= least_solved && seen.unsolved >= 10,
                "{stipulation}: {seen:?}"
            );
            assert!(seen.lengths.len() >= 2, "{stipulation}: {seen:?}");
            // The rule's edges came up: an attacker in check at the root, a check that mates at
            // once (H#), and HS# lines cut short by a check that mates the defender.
            match (stipulation.goal, stipulation.defender_first) {
                (Goal::Selfmate, _) => assert!(seen.dead_ends >= 100, "{seen:?}"),
                (Goal::Helpmate, false) => assert!(seen.mate_at_once >= 3, "{seen:?}"),
                _ => {}
            }
            if !stipulation.defender_first {
                assert!(seen.attacker_in_check >= 3, "{seen:?}");
            }
        }
    });
}

#[test]
fn longer_lines_agree_with_the_reference() {
    kyozume::search::with_search_stack(|| {
        let mut rng = ChaCha8Rng::seed_from_u64(41);
        let mut solver = Solver::new_lazy(32).unwrap();
        let mut unsolved = 0;
        for (stipulation, max) in [(HS, 8), (HS_FIRST, 9), (H_FIRST, 8)] {
            let seen = agree(&mut solver, &mut rng, stipulation, max, 15);
            eprintln!("{stipulation} within {max} plies: {seen:?}");
            assert!(seen.solved >= 1, "{stipulation}: {seen:?}");
            unsolved += seen.unsolved;
        }
        // Proving that no line exists up to 8 or 9 plies is the reference's costliest work.
        assert!(unsolved >= 10, "{unsolved}");
    });
}

/// The moves of a `checkmate` reply, or None for `checkmate nomate` (any other reply fails).
fn reply_line(root: &Position, reply: &str) -> Option<Vec<kyozume::shogi::Move>> {
    let moves = reply
        .strip_prefix("checkmate ")
        .unwrap_or_else(|| panic!("not a checkmate reply: {reply}"));
    if moves == "nomate" {
        return None;
    }
    let mut pos = root.clone();
    let line = moves
        .split_whitespace()
        .map(|text| {
            let m = pos
                .parse_move(text)
                .unwrap_or_else(|e| panic!("{text} in {reply}: {e}"));
            pos.do_move(m);
            m
        })
        .collect();
    Some(line)
}

#[test]
fn usi_switches_stipulations_between_problems_in_one_script() {
    // G*5b mates at once (H#), and also mates the defender-first attacker's king (HS# 受先); in
    // H# 受先 White attacks with a lone king, which never checks.
    let gold = Position::from_sfen("4k4/9/4P4/9/9/9/9/9/4K4 b G 1").unwrap();
    // HS#: a check the defender answers with a capture that opens its rook's file.
    let battery = Position::from_sfen("r8/9/9/9/s1k6/9/9/1P7/KL7 b G 1").unwrap();
    let no_attacker_king = "4k4/9/4P4/9/9/9/9/9/9 b G 1";
    let h = Stipulation::HELPMATE;
    // Each step's commands before its `go`, and the problem it poses (None: an error).
    type Step<'a> = (Vec<String>, Option<(&'a Position, Stipulation)>);
    let steps: Vec<Step> = vec![
        (
            vec![format!("position sfen {}", gold.to_sfen())],
            Some((&gold, h)),
        ),
        (
            vec![
                "setoption name Stipulation value HS#".to_string(),
                "setoption name DefenderFirst value true".to_string(),
            ],
            Some((&gold, HS_FIRST)),
        ),
        (
            vec!["setoption name Stipulation value H#".to_string()],
            Some((&gold, H_FIRST)),
        ),
        (
            vec![
                "setoption name DefenderFirst value false".to_string(),
                "setoption name Stipulation value HS#".to_string(),
                format!("position sfen {}", battery.to_sfen()),
            ],
            Some((&battery, HS)),
        ),
        // No attacker king: an error line, and the engine answers the next go.
        (vec![format!("position sfen {no_attacker_king}")], None),
        (
            vec![
                "setoption name Stipulation value H#".to_string(),
                format!("position sfen {}", gold.to_sfen()),
            ],
            Some((&gold, h)),
        ),
    ];
    let mut script = String::from("usi\nisready\n");
    for (commands, _) in &steps {
        for c in commands {
            script.push_str(c);
            script.push('\n');
        }
        script.push_str("go mate 10000\n");
    }
    let (lines, status, _) = common::run_script(&script, std::time::Duration::from_secs(60));
    assert!(status.success());
    let replies: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("checkmate") || l.starts_with("info string error"))
        .collect();
    let in_force: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("info string stipulation"))
        .collect();
    let mut at = 0;
    let mut searched = 0;
    for (_, expected) in &steps {
        match expected {
            Some((root, stipulation)) => {
                // The search said which stipulation it was under.
                assert!(
                    in_force[searched].contains(stipulation.code()),
                    "{}: {lines:#?}",
                    stipulation.code()
                );
                searched += 1;
                let want = Reference::shortest(root, *stipulation, 5);
                match reply_line(root, replies[at]) {
                    Some(line) => {
                        verify_solution(root, *stipulation, &line).unwrap();
                        assert_eq!(Some(line.len() as u32), want.map(|w| w.0), "{stipulation}");
                    }
                    None => assert_eq!(want, None, "{stipulation}: {lines:#?}"),
                }
                at += 1;
            }
            None => {
                assert!(replies[at].starts_with("info string error"), "{lines:#?}");
                assert_eq!(replies[at + 1], "checkmate nomate");
                at += 2;
            }
        }
    }
    assert_eq!(at, replies.len(), "{lines:#?}");
}

#[test]
fn a_defender_pawn_drop_that_would_mate_is_no_hs_solution() {
    // Black (the attacker) is in check from the bishop on 3g: Ra4h blocks it and checks the
    // king on 8h. Of White's answers only P*5h would mate (the rook on 4h is pinned, the
    // knights on 7f and 6f cover 6h and 5h, Black's pawns fill 4i and 6i): a pawn-drop mate,
    // illegal.
    let root = Position::from_sfen("5R3/9/9/9/9/2nn5/6b2/1k7/3PKP3 b p 1").unwrap();
    assert!(root.in_check());
    let check = root.parse_move("4a4h").unwrap();
    let mut pos = root.clone();
    pos.do_move(check);
    let drop = pos.parse_move("P*5h");
    // Played anyway, the drop would leave Black mated.
    let mut moves = MoveList::new();
    movegen::legal(&pos, &mut moves);
    let raw = kyozume::shogi::Move::drop(PieceType::Pawn, Square::from_usi("5h").unwrap());
    assert!(!moves.as_slice().contains(&raw), "P*5h offered as legal");
    assert!(drop.is_err(), "P*5h parsed as a legal move");
    pos.do_move(raw);
    assert!(movegen::is_checkmate(&pos), "the drop would mate");
    assert!(verify_solution(&root, HS, &[check, raw]).is_err());
    kyozume::search::with_search_stack(|| {
        let mut solver = Solver::new_lazy(16).unwrap();
        let want = Reference::shortest(&root, HS, 6);
        let got = engine(&mut solver, &root, (HS, Strategy::Auto, 1), 6);
        assert_eq!(got, want);
        assert_ne!(got.map(|g| g.0), Some(2));
    });
}

/// The rows of `tests/data/fairy_mate.tsv`: name, position, stipulation, Fairy Mate's length.
fn fairy_mate_rows() -> Vec<(String, Position, Stipulation, u32)> {
    let path = format!("{}/tests/data/fairy_mate.tsv", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("name\t"))
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (
                f[0].to_string(),
                Position::from_sfen(f[1]).unwrap(),
                Stipulation::parse(f[2]).unwrap(),
                f[3].parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn fairy_mates_lengths_deepening_the_pass_and_its_links_on_disk_agree() {
    let rows = fairy_mate_rows();
    assert!(rows.iter().filter(|r| r.2.goal == Goal::Selfmate).count() >= 10);
    assert!(rows.iter().filter(|r| r.2.defender_first).count() >= 10);
    let dir = tempfile::tempdir().unwrap();
    kyozume::search::with_search_stack(|| {
        let mut solver = Solver::new_lazy(64).unwrap();
        let stop = AtomicBool::new(false);
        let mut passes = 0;
        let mut on_disk = 0;
        for (i, (name, root, stipulation, plies)) in rows.iter().enumerate() {
            let mut answers = Vec::new();
            let settings = [
                (Strategy::Auto, 1, None),
                (Strategy::BreadthFirst, 1 + i % 2, None),
                (Strategy::BreadthFirst, 2 - i % 2, Some(dir.path())),
            ];
            for (strategy, threads, disk) in settings {
                if stipulation.defender_first && strategy == Strategy::BreadthFirst {
                    continue;
                }
                let limits = Limits {
                    stipulation: *stipulation,
                    strategy,
                    threads,
                    solution_limit: 3,
                    tuning: PassTuning::threads_on_every_level().into(),
                    disk: kyozume::search::DiskBudget {
                        dir: disk.map(|d| d.to_path_buf()),
                        cap_bytes: 1 << 30,
                        always: disk.is_some(),
                    },
                    ..Default::default()
                };
                let (log, levels) = crossbeam_channel::unbounded();
                let limits = Limits {
                    level_log: Some(log),
                    ..limits
                };
                let r = solver.solve(root, &limits, &stop, &mut |_| {}).unwrap();
                drop(limits);
                let written = levels.iter().map(|l| l.disk_bytes).max().unwrap_or(0);
                on_disk += usize::from(written > 0);
                let Outcome::Mate(line) = &r.outcome else {
                    panic!("{name}: {:?}", r.outcome);
                };
                assert_eq!(line.len() as u32, *plies, "{name} {strategy:?}");
                let solutions = r.solutions.expect("counted");
                for l in &solutions.lines {
                    verify_solution(root, *stipulation, l).unwrap();
                }
                answers.push((solutions.count, solutions.complete));
                passes += usize::from(strategy == Strategy::BreadthFirst);
            }
            assert!(
                answers.windows(2).all(|w| w[0] == w[1]),
                "{name}: {answers:?}"
            );
        }
        assert!(passes >= 20);
        // The HS# passes wrote their links (the 受先 rows are deepened).
        assert!(on_disk >= 10, "{on_disk} passes wrote links");
    });
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
