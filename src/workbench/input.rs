//! Problem input for the command line: SFEN, a USI `position ...` string, or a BOD diagram /
//! KIF file, detected automatically or forced with `--format`.

use crate::shogi::kif::{parse_bod, BodError};
use crate::shogi::{Position, SfenError};
use crate::usi::command::{Command, CommandError};
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

/// Reads one problem.
pub fn parse_problem(text: &str, format: Format) -> Result<Position, InputError> {
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
            Ok(Position::from_sfen(t)?)
        }
        Format::Usi => match Command::parse(text.trim()) {
            Ok(Command::Position { base, moves }) => {
                crate::usi::build_position(&base, &moves).map_err(InputError::Usi)
            }
            Ok(_) => Err(InputError::Usi(
                "expected 'position startpos|sfen ...'".into(),
            )),
            Err(CommandError::Syntax(e)) | Err(CommandError::Unknown(e)) => Err(InputError::Usi(e)),
        },
        Format::Bod | Format::Kif => Ok(parse_bod(text)?),
        Format::Auto => unreachable!("resolved above"),
    }
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
    fn decodes_shift_jis() {
        let (bytes, _, _) = encoding_rs::SHIFT_JIS.encode("後手の持駒：なし");
        assert_eq!(decode(&bytes), "後手の持駒：なし");
        assert_eq!(decode("先手".as_bytes()), "先手");
    }
}
