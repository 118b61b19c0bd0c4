//! A position as USI writes it — `startpos` or `sfen <sfen>`, then `moves ...` — read into a
//! [`Position`] under the rules of the problem. The `position` and `probe` commands, a
//! `position ...` problem on the command line and `--probe` all read it here.

use crate::shogi::{Position, RuleSet};

/// Where a USI position starts, before its moves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PositionBase {
    Startpos,
    Sfen(String),
}

/// A position as USI writes it: where it starts and the moves played from there (not yet
/// read: they are read under the problem's rules, see [`PositionLine::build`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PositionLine {
    pub base: PositionBase,
    pub moves: Vec<String>,
}

impl PositionLine {
    /// Reads the words after `position`: `startpos|sfen <sfen> [moves ...]`. The error is the
    /// usage line.
    pub fn parse_words(words: &[&str]) -> Result<PositionLine, String> {
        let moves_at = words.iter().position(|&t| t == "moves");
        let (spec, moves) = match moves_at {
            Some(i) => (
                &words[..i],
                words[i + 1..].iter().map(|s| s.to_string()).collect(),
            ),
            None => (words, Vec::new()),
        };
        let base = match spec.split_first() {
            Some((&"startpos", [])) => PositionBase::Startpos,
            Some((&"startpos", _)) => return Err("position startpos: unexpected tokens".into()),
            Some((&"sfen", fields)) if !fields.is_empty() => PositionBase::Sfen(fields.join(" ")),
            Some((&"sfen", _)) => return Err("position sfen: missing SFEN".into()),
            _ => return Err("expected 'position startpos|sfen <sfen> [moves ...]'".into()),
        };
        Ok(PositionLine { base, moves })
    }

    /// Reads a whole `position ...` line.
    pub fn parse(text: &str) -> Result<PositionLine, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        match words.split_first() {
            Some((&"position", rest)) => PositionLine::parse_words(rest),
            _ => Err("expected 'position startpos|sfen <sfen> [moves ...]'".into()),
        }
    }

    /// The position this line sets up, read under `rules`; the error names what is wrong (the
    /// SFEN, or the first move that is not legal).
    pub fn build(&self, rules: RuleSet) -> Result<Position, String> {
        let pos = match &self.base {
            PositionBase::Startpos => Position::startpos(),
            PositionBase::Sfen(s) => {
                Position::from_sfen_under(s, rules).map_err(|e| format!("bad SFEN: {e}"))?
            }
        };
        play_moves(pos, &self.moves, rules)
    }
}

/// `pos` after the USI `moves`, legal under `rules`; the error names the first that is not.
pub fn play_moves(mut pos: Position, moves: &[String], rules: RuleSet) -> Result<Position, String> {
    rules.adopt(&mut pos);
    for (i, text) in moves.iter().enumerate() {
        let m = pos
            .parse_move_under(text, rules)
            .map_err(|e| format!("move {} of the list: {e}", i + 1))?;
        pos.do_move(m);
    }
    Ok(pos)
}

/// A position of a problem, as a composer names it: an SFEN, a `position ...` line, or USI
/// moves played from the problem's position (`--probe`).
pub fn position_of_problem(
    problem: &Position,
    text: &str,
    rules: RuleSet,
) -> Result<Position, String> {
    let text = text.trim();
    if let Ok(p) = Position::from_sfen_under(text, rules) {
        return Ok(p);
    }
    if text.starts_with("position") {
        return PositionLine::parse(text)?.build(rules);
    }
    let moves: Vec<String> = text.split_whitespace().map(String::from).collect();
    play_moves(problem.clone(), &moves, rules)
        .map_err(|e| format!("not an SFEN, and as moves from the problem: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_position_lines() {
        assert_eq!(
            PositionLine::parse("position startpos moves 7g7f 3c3d"),
            Ok(PositionLine {
                base: PositionBase::Startpos,
                moves: vec!["7g7f".into(), "3c3d".into()]
            })
        );
        assert_eq!(
            PositionLine::parse("position sfen 4k4/9/9/9/9/9/9/9/9 b G 1")
                .unwrap()
                .base,
            PositionBase::Sfen("4k4/9/9/9/9/9/9/9/9 b G 1".into())
        );
        for bad in ["position", "position sfen", "position startpos 7g7f", "go"] {
            assert!(PositionLine::parse(bad).is_err(), "{bad}");
        }
        let line = PositionLine::parse("position startpos moves 7g7f 3c3d").unwrap();
        assert!(line
            .build(RuleSet::PLAIN)
            .unwrap()
            .to_sfen()
            .starts_with("lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P6/"));
        let bad_move = PositionLine::parse("position startpos moves 7g7e").unwrap();
        assert!(bad_move
            .build(RuleSet::PLAIN)
            .unwrap_err()
            .contains("move 1"));
    }

    #[test]
    fn names_a_position_of_the_problem() {
        let problem = Position::startpos();
        let rules = RuleSet::PLAIN;
        let by_moves = position_of_problem(&problem, "7g7f", rules).unwrap();
        let by_line = position_of_problem(&problem, "position startpos moves 7g7f", rules).unwrap();
        let by_sfen = position_of_problem(&problem, &by_moves.to_sfen(), rules).unwrap();
        assert_eq!(by_moves.to_sfen(), by_line.to_sfen());
        assert_eq!(by_moves.to_sfen(), by_sfen.to_sfen());
        assert!(position_of_problem(&problem, "7g7e", rules).is_err());
    }
}
