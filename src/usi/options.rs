//! The engine's USI options: declaration (`usi`) and validation (`setoption`).

use crate::config::{EngineConfig, MAX_HASH_MB, MAX_SOLUTION_LIMIT, MAX_THREADS};
use thiserror::Error;

/// A validated option change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptionChange {
    HashMb(usize),
    Threads(usize),
    SolutionLimit(usize),
    ClearHash,
    /// A GUI-standard option this engine has no use for (accepted silently).
    Ignored,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OptionError {
    #[error("unknown option '{0}'")]
    Unknown(String),
    #[error("option {name}: value '{value}' is not an integer in {min}..={max}")]
    BadSpin {
        name: &'static str,
        value: String,
        min: usize,
        max: usize,
    },
    #[error("option {0} needs a value")]
    MissingValue(&'static str),
}

/// `option ...` lines for the `usi` answer, with defaults from the configuration.
pub fn declarations(config: &EngineConfig) -> Vec<String> {
    vec![
        format!(
            "option name USI_Hash type spin default {} min 1 max {MAX_HASH_MB}",
            config.hash_mb
        ),
        format!(
            "option name Threads type spin default {} min 1 max {MAX_THREADS}",
            config.threads
        ),
        format!(
            "option name SolutionLimit type spin default {} min 1 max {MAX_SOLUTION_LIMIT}",
            config.solution_limit
        ),
        "option name ClearHash type button".to_string(),
    ]
}

fn spin(
    name: &'static str,
    value: Option<&str>,
    min: usize,
    max: usize,
) -> Result<usize, OptionError> {
    let value = value.ok_or(OptionError::MissingValue(name))?;
    value
        .trim()
        .parse::<usize>()
        .ok()
        .filter(|v| (min..=max).contains(v))
        .ok_or_else(|| OptionError::BadSpin {
            name,
            value: value.chars().take(40).collect(),
            min,
            max,
        })
}

/// Validates `setoption name <name> [value <value>]`. Names compare case-insensitively,
/// as some GUIs change their case.
pub fn parse_change(name: &str, value: Option<&str>) -> Result<OptionChange, OptionError> {
    let lower = name.to_ascii_lowercase();
    match lower.as_str() {
        "usi_hash" | "hash" => spin("USI_Hash", value, 1, MAX_HASH_MB).map(OptionChange::HashMb),
        "threads" => spin("Threads", value, 1, MAX_THREADS).map(OptionChange::Threads),
        "solutionlimit" => {
            spin("SolutionLimit", value, 1, MAX_SOLUTION_LIMIT).map(OptionChange::SolutionLimit)
        }
        "clearhash" | "clear hash" => Ok(OptionChange::ClearHash),
        _ if lower.starts_with("usi_") => Ok(OptionChange::Ignored),
        _ => Err(OptionError::Unknown(name.chars().take(40).collect())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_values() {
        assert_eq!(
            parse_change("USI_Hash", Some("64")),
            Ok(OptionChange::HashMb(64))
        );
        assert_eq!(
            parse_change("Hash", Some("64")),
            Ok(OptionChange::HashMb(64))
        );
        assert!(matches!(
            parse_change("USI_Hash", Some("0")),
            Err(OptionError::BadSpin { .. })
        ));
        assert!(matches!(
            parse_change("USI_Hash", Some("lots")),
            Err(OptionError::BadSpin { .. })
        ));
        assert_eq!(
            parse_change("USI_Hash", None),
            Err(OptionError::MissingValue("USI_Hash"))
        );
        assert_eq!(
            parse_change("USI_Ponder", Some("true")),
            Ok(OptionChange::Ignored)
        );
        assert_eq!(
            parse_change("Foo", Some("1")),
            Err(OptionError::Unknown("Foo".into()))
        );
        assert_eq!(parse_change("ClearHash", None), Ok(OptionChange::ClearHash));
    }
}
