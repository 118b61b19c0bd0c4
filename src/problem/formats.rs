//! A problem's text: SFEN, a USI `position ...` line, or a BOD diagram / KIF file, detected
//! from the text or named by the caller (`--format`), and what a file says of its stipulation
//! and length.

use super::PositionLine;
use crate::shogi::kif::{parse_bod_under, BodError};
use crate::shogi::stipulation::StipulationError;
use crate::shogi::{Position, RuleSet, SfenError, Stipulation};
use thiserror::Error;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Decide from the text.
    #[default]
    Auto,
    /// `<board> <side> <hand> [<move number>]`, optionally prefixed by `sfen`.
    Sfen,
    /// `position startpos|sfen ... [moves ...]`.
    Usi,
    /// A BOD board diagram.
    Bod,
    /// A KIF file (its diagram, or 平手).
    Kif,
}

#[derive(Debug, Error)]
pub enum InputError {
    #[error("empty input")]
    Empty,
    #[error("invalid SFEN: {0}")]
    Sfen(#[from] SfenError),
    #[error("invalid USI position: {0}")]
    Usi(String),
    #[error("invalid diagram: {0}")]
    Bod(#[from] BodError),
    #[error("作品形式: {0}")]
    Stipulation(StipulationError),
}

/// Which format `text` is in, when asked to decide.
pub fn detect(text: &str) -> Format {
    let t = text.trim_start_matches('\u{feff}').trim();
    if t.starts_with("position") {
        Format::Usi
    } else if t.contains("+--") || t.contains("持駒") || t.contains("手合割") {
        if t.contains("手数----") || t.contains("手合割") || t.contains("開始日時") {
            Format::Kif
        } else {
            Format::Bod
        }
    } else {
        Format::Sfen
    }
}

/// Reads one problem (normal shogi's rules).
pub fn parse_problem(text: &str, format: Format) -> Result<Position, InputError> {
    parse_problem_under(text, format, RuleSet::PLAIN)
}

/// Reads one problem to be solved under `rules`, which say where pieces may stand and what is
/// check.
pub fn parse_problem_under(
    text: &str,
    format: Format,
    rules: RuleSet,
) -> Result<Position, InputError> {
    let text = text.trim_start_matches('\u{feff}');
    if text.trim().is_empty() {
        return Err(InputError::Empty);
    }
    let format = match format {
        Format::Auto => detect(text),
        f => f,
    };
    match format {
        Format::Sfen => {
            let t = text.trim();
            let t = t.strip_prefix("sfen ").unwrap_or(t);
            Ok(Position::from_sfen_under(t, rules)?)
        }
        Format::Usi => PositionLine::parse(text.trim())
            .and_then(|line| line.build(rules))
            .map_err(InputError::Usi),
        Format::Bod | Format::Kif => Ok(parse_bod_under(text, rules)?),
        Format::Auto => unreachable!("resolved above"),
    }
}

/// The stipulation a diagram or KIF file names, if it names one: a KIF header line
/// `作品形式：協力自玉詰`, or a first line in Fairy Mate's style, a stipulation's name before the
/// diagram (`協力自玉詰 8手`). A `作品形式` this engine cannot solve is an error; a first line
/// that is not a stipulation is none (the diagram parser skips what comes before the board).
pub fn named_stipulation(text: &str) -> Result<Option<Stipulation>, InputError> {
    let text = text.trim_start_matches('\u{feff}');
    for line in text.lines() {
        let line = line.trim();
        if let Some(value) = line
            .strip_prefix("作品形式：")
            .or_else(|| line.strip_prefix("作品形式:"))
        {
            return match Stipulation::parse_prefix(value) {
                Some((s, _)) => Ok(Some(s)),
                None => Err(InputError::Stipulation(StipulationError::Unknown(
                    value.trim().to_string(),
                ))),
            };
        }
    }
    let first = text.lines().map(str::trim).find(|l| !l.is_empty());
    Ok(first.and_then(|l| Stipulation::parse_prefix(l).map(|(s, _)| s)))
}

/// The length a diagram or KIF file states, if it states one: a KIF header line `手数＝N`, or
/// the length after the stipulation on a first line in Fairy Mate's style (`協力自玉詰 9手`).
/// Other formats state none.
pub fn named_length(text: &str, format: Format) -> Option<u32> {
    let text = text.trim_start_matches('\u{feff}');
    let resolved = match format {
        Format::Auto => detect(text),
        f => f,
    };
    if !matches!(resolved, Format::Bod | Format::Kif) {
        return None;
    }
    for line in text.lines() {
        let line = line.trim();
        if let Some(value) = line
            .strip_prefix("手数＝")
            .or_else(|| line.strip_prefix("手数="))
        {
            return crate::shogi::stipulation::parse_length(value);
        }
    }
    let first = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    match Stipulation::parse_stated(first) {
        Ok((_, plies)) => plies,
        Err(_) => None,
    }
}

/// Reads one problem and its stipulation: `choose` gets the one its file names (diagrams and
/// KIF files only; see [`named_stipulation`]) and says which holds; the position is read under
/// that one's rules.
pub fn parse_problem_and_stipulation(
    text: &str,
    format: Format,
    choose: impl FnOnce(Option<Stipulation>) -> Stipulation,
) -> Result<(Position, Stipulation), InputError> {
    let resolved = match format {
        Format::Auto => detect(text.trim_start_matches('\u{feff}')),
        f => f,
    };
    let named = match resolved {
        Format::Bod | Format::Kif => named_stipulation(text)?,
        _ => None,
    };
    let stipulation = choose(named);
    let position = parse_problem_under(text, format, stipulation.rules())?;
    Ok((position, stipulation))
}

/// File contents as text: UTF-8, or Shift_JIS as Kifu for Windows writes `.kif` files.
pub fn decode(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => {
            let (text, _, _) = encoding_rs::SHIFT_JIS.decode(bytes);
            text.into_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_and_reads_each_format() {
        let sfen = "4k4/9/4P4/9/9/9/9/9/9 b G 1";
        assert_eq!(detect(sfen), Format::Sfen);
        assert_eq!(parse_problem(sfen, Format::Auto).unwrap().to_sfen(), sfen);
        assert_eq!(
            parse_problem(&format!("sfen {sfen}"), Format::Auto)
                .unwrap()
                .to_sfen(),
            sfen
        );
        let usi = "position startpos moves 7g7f";
        assert_eq!(detect(usi), Format::Usi);
        assert!(parse_problem(usi, Format::Auto)
            .unwrap()
            .to_sfen()
            .starts_with("lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/"));
        assert!(matches!(
            parse_problem("position startpos moves 7g7e", Format::Auto),
            Err(InputError::Usi(_))
        ));
        assert!(matches!(
            parse_problem("  ", Format::Auto),
            Err(InputError::Empty)
        ));
        assert!(matches!(
            parse_problem(sfen, Format::Bod),
            Err(InputError::Bod(_))
        ));
        let bod = crate::shogi::kif::to_bod(&Position::from_sfen(sfen).unwrap());
        assert_eq!(detect(&bod), Format::Bod);
        assert_eq!(detect(&format!("手合割：平手\n{bod}")), Format::Kif);
    }

    #[test]
    fn a_file_names_its_stipulation() {
        use crate::shogi::Goal;
        let bod =
            crate::shogi::kif::to_bod(&Position::from_sfen("4k4/9/9/9/9/9/9/9/4K4 b G 1").unwrap());
        assert_eq!(named_stipulation(&bod).unwrap(), None);
        let fm = format!("協力自玉詰 8手\n{bod}");
        let named = |n: Option<Stipulation>| n.unwrap_or_default();
        let (pos, s) = parse_problem_and_stipulation(&fm, Format::Auto, named).unwrap();
        assert_eq!(pos.to_sfen(), "4k4/9/9/9/9/9/9/9/4K4 b G 1");
        assert_eq!(s.goal, Goal::Selfmate);
        let kif = format!("作品形式：受先ばか詰\n手合割：平手\n{bod}");
        let s = parse_problem_and_stipulation(&kif, Format::Auto, named)
            .unwrap()
            .1;
        assert!(s.defender_first && s.goal == Goal::Helpmate);
        let odd = format!("作品形式：詰将棋\n{bod}");
        assert!(matches!(
            parse_problem_and_stipulation(&odd, Format::Auto, named),
            Err(InputError::Stipulation(_))
        ));
        // Conditions in the name, and a position only they allow (a pawn on the last rank
        // under 安南): read under the rules the file names.
        let annan = "安南協力詰 3手\n".to_string()
            + &crate::shogi::kif::to_bod(
                &Position::from_sfen_under(
                    "4k3P/9/9/9/9/9/9/9/4K4 b G 1",
                    Stipulation::parse("安南ばか詰").unwrap().rules(),
                )
                .unwrap(),
            );
        let (pos, s) = parse_problem_and_stipulation(&annan, Format::Auto, named).unwrap();
        assert_eq!(s.japanese(), "安南協力詰");
        assert_eq!(pos.to_sfen(), "4k3P/9/9/9/9/9/9/9/4K4 b G 1");
        assert!(
            parse_problem_and_stipulation(&annan, Format::Auto, |_| Stipulation::HELPMATE).is_err()
        );
    }

    #[test]
    fn a_file_states_its_length() {
        let bod =
            crate::shogi::kif::to_bod(&Position::from_sfen("4k4/9/9/9/9/9/9/9/4K4 b G 1").unwrap());
        assert_eq!(named_length(&bod, Format::Auto), None);
        assert_eq!(
            named_length(&format!("協力自玉詰 8手\n{bod}"), Format::Auto),
            Some(8)
        );
        assert_eq!(
            named_length(&format!("安南ばか詰 十三手\n{bod}"), Format::Auto),
            Some(13)
        );
        assert_eq!(
            named_length(&format!("作品形式：協力詰\n手数＝27\n{bod}"), Format::Auto),
            Some(27)
        );
        assert_eq!(
            named_length(&format!("協力自玉詰\n{bod}"), Format::Auto),
            None
        );
        // An SFEN states none, whatever follows it.
        assert_eq!(
            named_length("4k4/9/9/9/9/9/9/9/4K4 b G 1", Format::Auto),
            None
        );
        // The line that states it is still skipped by the diagram's reader.
        let (pos, _) =
            parse_problem_and_stipulation(&format!("手数＝8\n{bod}"), Format::Auto, |n| {
                n.unwrap_or_default()
            })
            .unwrap();
        assert_eq!(pos.to_sfen(), "4k4/9/9/9/9/9/9/9/4K4 b G 1");
    }

    #[test]
    fn decodes_shift_jis() {
        let (bytes, _, _) = encoding_rs::SHIFT_JIS.encode("後手の持駒：なし");
        assert_eq!(decode(&bytes), "後手の持駒：なし");
        assert_eq!(decode("先手".as_bytes()), "先手");
    }
}
