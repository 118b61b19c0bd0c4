//! The engine's USI options: declaration (`usi`) and validation (`setoption`).

use crate::config::{
    EngineConfig, MAX_CHECKPOINT_MINUTES, MAX_DISK_CAP_MB, MAX_HASH_MB, MAX_MAX_PLIES,
    MAX_SOLUTION_LIMIT, MAX_THREADS,
};
use crate::shogi::conditions::{
    CaptureRule, Captures, ConditionsError, Paralysis, PawnDropMate, PieceMoves,
};
use crate::shogi::{Goal, Stipulation};
use std::path::PathBuf;
use thiserror::Error;

/// A validated option change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptionChange {
    HashMb(usize),
    Threads(usize),
    SolutionLimit(usize),
    /// None: the system's temporary directory.
    TempDir(Option<PathBuf>),
    DiskCapMb(usize),
    /// None: no checkpoints.
    CheckpointDir(Option<PathBuf>),
    CheckpointMinutes(usize),
    Goal(Goal),
    DefenderFirst(bool),
    PieceMoves(PieceMoves),
    PawnDropMate(PawnDropMate),
    Captures(Captures),
    CaptureRule(CaptureRule),
    Paralysis(Paralysis),
    /// 0: no bound.
    MaxPlies(usize),
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
    #[error("option {name}: '{value}' is not a directory")]
    NotADirectory { name: &'static str, value: String },
    #[error("option Stipulation: '{0}' is not H# or HS#")]
    BadStipulation(String),
    #[error("option {name}: '{value}' is not true or false")]
    BadCheck { name: &'static str, value: String },
    #[error("setoption: {0}")]
    BadCondition(ConditionsError),
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
        format!(
            "option name TempDir type string default {}",
            config
                .temp_dir
                .as_ref()
                .map_or("<empty>".to_string(), |d| d.display().to_string())
        ),
        format!(
            "option name DiskCap type spin default {} min 0 max {MAX_DISK_CAP_MB}",
            config.disk_cap_mb
        ),
        format!(
            "option name CheckpointDir type string default {}",
            config
                .checkpoint_dir
                .as_ref()
                .map_or("<empty>".to_string(), |d| d.display().to_string())
        ),
        format!(
            "option name CheckpointMinutes type spin default {} min 0 max {MAX_CHECKPOINT_MINUTES}",
            config.checkpoint_minutes
        ),
        format!(
            "option name Stipulation type combo default {} var H# var HS#",
            goal_name(config.goal)
        ),
        format!(
            "option name DefenderFirst type check default {}",
            config.defender_first
        ),
        format!(
            "option name PieceMoves type combo default {} var Normal var Annan var Anhoku var Taimen var Haimen",
            config.piece_moves.usi_name()
        ),
        format!(
            "option name PawnDropMate type combo default {} var Illegal var Allowed",
            config.pawn_drop_mate.usi_name()
        ),
        format!(
            "option name Captures type combo default {} var Free var Greedy var Ascetic",
            config.captures.usi_name()
        ),
        format!(
            "option name CaptureRule type combo default {} var Normal var Circe var AntiCirce var PWC",
            config.capture_rule.usi_name()
        ),
        format!(
            "option name Paralysis type combo default {} var None var Madrasi var KMadrasi",
            config.paralysis.usi_name()
        ),
        format!(
            "option name MaxPlies type spin default {} min 0 max {MAX_MAX_PLIES}",
            config.max_plies
        ),
        "option name ClearHash type button".to_string(),
    ]
}

/// The combo value of a goal.
fn goal_name(goal: Goal) -> &'static str {
    match goal {
        Goal::Helpmate => "H#",
        Goal::Selfmate => "HS#",
    }
}

/// A `Stipulation` value: `H#` or `HS#` (the names composers write are taken too, without 受先,
/// which is `DefenderFirst`).
fn goal(value: Option<&str>) -> Result<Goal, OptionError> {
    let value = value.ok_or(OptionError::MissingValue("Stipulation"))?;
    match Stipulation::parse(value) {
        Ok(s) if !s.defender_first && s.conditions.is_none() => Ok(s.goal),
        _ => Err(OptionError::BadStipulation(
            value.chars().take(40).collect(),
        )),
    }
}

/// A combo value of a condition (`PieceMoves`, `PawnDropMate`, `Captures`, `CaptureRule`,
/// `Paralysis`), in any case.
fn condition<T>(name: &'static str, value: Option<&str>) -> Result<T, OptionError>
where
    T: std::str::FromStr<Err = ConditionsError>,
{
    let value = value.ok_or(OptionError::MissingValue(name))?;
    let value: String = value.chars().take(40).collect();
    value.parse().map_err(OptionError::BadCondition)
}

/// A `check` value: `true` or `false`.
fn check(name: &'static str, value: Option<&str>) -> Result<bool, OptionError> {
    let value = value.ok_or(OptionError::MissingValue(name))?;
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(OptionError::BadCheck {
            name,
            value: value.chars().take(40).collect(),
        }),
    }
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

/// A `TempDir` or `CheckpointDir` value: empty or `<empty>` for none (the system's temporary
/// directory, no checkpoints), else an existing directory (checked now, so that a typo shows at
/// once rather than when a long search needs the disk).
fn directory(name: &'static str, value: Option<&str>) -> Result<Option<PathBuf>, OptionError> {
    let value = value.map(str::trim).unwrap_or("");
    if value.is_empty() || value == "<empty>" {
        return Ok(None);
    }
    let dir = PathBuf::from(value);
    if dir.is_dir() {
        Ok(Some(dir))
    } else {
        Err(OptionError::NotADirectory {
            name,
            value: value.chars().take(200).collect(),
        })
    }
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
        "tempdir" => directory("TempDir", value).map(OptionChange::TempDir),
        "checkpointdir" => directory("CheckpointDir", value).map(OptionChange::CheckpointDir),
        "checkpointminutes" => spin("CheckpointMinutes", value, 0, MAX_CHECKPOINT_MINUTES)
            .map(OptionChange::CheckpointMinutes),
        "diskcap" => spin("DiskCap", value, 0, MAX_DISK_CAP_MB).map(OptionChange::DiskCapMb),
        "stipulation" => goal(value).map(OptionChange::Goal),
        "defenderfirst" => check("DefenderFirst", value).map(OptionChange::DefenderFirst),
        "piecemoves" => condition("PieceMoves", value).map(OptionChange::PieceMoves),
        "pawndropmate" => condition("PawnDropMate", value).map(OptionChange::PawnDropMate),
        "captures" => condition("Captures", value).map(OptionChange::Captures),
        "capturerule" => condition("CaptureRule", value).map(OptionChange::CaptureRule),
        "paralysis" => condition("Paralysis", value).map(OptionChange::Paralysis),
        "maxplies" => spin("MaxPlies", value, 0, MAX_MAX_PLIES).map(OptionChange::MaxPlies),
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
        assert_eq!(
            parse_change("PieceMoves", Some("annan")),
            Ok(OptionChange::PieceMoves(PieceMoves::Annan))
        );
        assert_eq!(
            parse_change("Captures", Some("Greedy")),
            Ok(OptionChange::Captures(Captures::Greedy))
        );
        assert_eq!(
            parse_change("PawnDropMate", Some("Allowed")),
            Ok(OptionChange::PawnDropMate(PawnDropMate::Allowed))
        );
        assert!(matches!(
            parse_change("PieceMoves", Some("Annam")),
            Err(OptionError::BadCondition(_))
        ));
        assert_eq!(
            parse_change("Captures", None),
            Err(OptionError::MissingValue("Captures"))
        );
        assert_eq!(
            parse_change("DiskCap", Some("0")),
            Ok(OptionChange::DiskCapMb(0))
        );
        assert_eq!(
            parse_change("TempDir", Some("<empty>")),
            Ok(OptionChange::TempDir(None))
        );
        assert_eq!(
            parse_change("TempDir", None),
            Ok(OptionChange::TempDir(None))
        );
        let here = env!("CARGO_MANIFEST_DIR");
        assert_eq!(
            parse_change("TempDir", Some(here)),
            Ok(OptionChange::TempDir(Some(PathBuf::from(here))))
        );
        let file = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
        assert!(matches!(
            parse_change("TempDir", Some(file)),
            Err(OptionError::NotADirectory {
                name: "TempDir",
                ..
            })
        ));
        assert_eq!(
            parse_change("CheckpointDir", Some("")),
            Ok(OptionChange::CheckpointDir(None))
        );
        assert_eq!(
            parse_change("checkpointdir", Some(here)),
            Ok(OptionChange::CheckpointDir(Some(PathBuf::from(here))))
        );
        let error = parse_change("CheckpointDir", Some(file)).unwrap_err();
        assert!(
            error.to_string().starts_with("option CheckpointDir: '"),
            "{error}"
        );
        assert_eq!(
            parse_change("CheckpointMinutes", Some("0")),
            Ok(OptionChange::CheckpointMinutes(0))
        );
        assert_eq!(
            parse_change("MaxPlies", Some("9")),
            Ok(OptionChange::MaxPlies(9))
        );
        assert!(matches!(
            parse_change("MaxPlies", Some("-1")),
            Err(OptionError::BadSpin { .. })
        ));
        assert!(matches!(
            parse_change("CheckpointMinutes", Some("1441")),
            Err(OptionError::BadSpin { .. })
        ));
    }
}
