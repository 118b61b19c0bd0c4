//! Default option values, read from `engine.toml`.
//!
//! Looked for, in order: the path given with `--config`, `engine.toml` next to the executable,
//! `engine.toml` in the current directory. A missing file means built-in defaults; a malformed
//! one is an error (silently ignoring a typo would be worse).

use crate::shogi::conditions::{
    CaptureRule, Captures, Conditions, Paralysis, PawnDropMate, PieceMoves,
};
use crate::shogi::{Goal, Stipulation};
use serde::{Deserialize, Deserializer};
use std::path::{Path, PathBuf};
use thiserror::Error;

pub const DEFAULT_HASH_MB: usize = 256;
pub const MAX_HASH_MB: usize = 1 << 20;
pub const MAX_THREADS: usize = 256;
pub const MAX_SOLUTION_LIMIT: usize = 1000;
/// Default disk cap (MB) of a breadth-first pass that outgrows `USI_Hash`.
pub const DEFAULT_DISK_CAP_MB: usize = 65536;
pub const MAX_DISK_CAP_MB: usize = 1 << 30;
/// The longest time between two checkpoints the options allow, in minutes (a day).
pub const MAX_CHECKPOINT_MINUTES: usize = 1440;
/// The longest stated length (`MaxPlies`) the options take; 0 stands for no bound.
pub const MAX_MAX_PLIES: usize = 65535;

/// Engine option defaults.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EngineConfig {
    /// The memory budget in MB (USI_Hash): table, helpers and breadth-first pass.
    #[serde(rename = "USI_Hash")]
    pub hash_mb: usize,
    /// Search threads (default: the machine's logical cores).
    #[serde(rename = "Threads")]
    pub threads: usize,
    /// Shortest solutions to count: 1 = no uniqueness check (fastest), 2 = "is it unique?".
    #[serde(rename = "SolutionLimit")]
    pub solution_limit: usize,
    /// Where a breadth-first pass that outgrows the memory puts its temporary file (None or
    /// empty: the system's temporary directory).
    #[serde(rename = "TempDir")]
    pub temp_dir: Option<PathBuf>,
    /// MB that pass may write there (0: never use the disk).
    #[serde(rename = "DiskCap")]
    pub disk_cap_mb: usize,
    /// Where a breadth-first pass writes checkpoints to go on from after the engine ends (None
    /// or empty: none); see docs/usi.md.
    #[serde(rename = "CheckpointDir")]
    pub checkpoint_dir: Option<PathBuf>,
    /// Minutes between two checkpoints (0: at every level, for tests).
    #[serde(rename = "CheckpointMinutes")]
    pub checkpoint_minutes: usize,
    /// What the problems ask for: `H#` (ばか詰) or `HS#` (協力自玉詰).
    #[serde(rename = "Stipulation", deserialize_with = "goal_name")]
    pub goal: Goal,
    /// 受先: the defender, the side to move, moves first.
    #[serde(rename = "DefenderFirst")]
    pub defender_first: bool,
    /// Where pieces' powers come from: `Normal`, `Annan` (安南), `Anhoku` (安北), `Taimen`
    /// (対面), `Haimen` (背面).
    #[serde(rename = "PieceMoves", deserialize_with = "from_text")]
    pub piece_moves: PieceMoves,
    /// `Illegal` (normal shogi) or `Allowed` (打歩詰可).
    #[serde(rename = "PawnDropMate", deserialize_with = "from_text")]
    pub pawn_drop_mate: PawnDropMate,
    /// `Free` (normal shogi), `Greedy` (強欲) or `Ascetic` (禁欲).
    #[serde(rename = "Captures", deserialize_with = "from_text")]
    pub captures: Captures,
    /// What a capture does: `Normal`, `Circe` (キルケ), `AntiCirce` (アンチキルケ) or `PWC`.
    #[serde(rename = "CaptureRule", deserialize_with = "from_text")]
    pub capture_rule: CaptureRule,
    /// Which pieces are paralysed: `None`, `Madrasi` (マドラシ) or `KMadrasi` (Kマドラシ).
    #[serde(rename = "Paralysis", deserialize_with = "from_text")]
    pub paralysis: Paralysis,
    /// Search only solutions of at most this many plies (0: no bound): "none within N" is then
    /// an answer (see [`EngineConfig::max_plies`]).
    #[serde(rename = "MaxPlies")]
    pub max_plies: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            hash_mb: DEFAULT_HASH_MB,
            threads: logical_cores(),
            solution_limit: 2,
            temp_dir: None,
            disk_cap_mb: DEFAULT_DISK_CAP_MB,
            checkpoint_dir: None,
            checkpoint_minutes: 10,
            goal: Goal::Helpmate,
            defender_first: false,
            piece_moves: PieceMoves::Normal,
            pawn_drop_mate: PawnDropMate::Illegal,
            captures: Captures::Free,
            capture_rule: CaptureRule::Normal,
            paralysis: Paralysis::None,
            max_plies: 0,
        }
    }
}

impl EngineConfig {
    /// The stipulation the options set.
    pub fn stipulation(&self) -> Stipulation {
        Stipulation {
            goal: self.goal,
            defender_first: self.defender_first,
            conditions: self.conditions(),
        }
    }

    /// The bound `MaxPlies` sets on the lengths searched, if any.
    pub fn max_plies(&self) -> Option<u32> {
        (self.max_plies > 0).then_some(self.max_plies as u32)
    }

    /// What a search of a problem under `stipulation`, given at most `time`, is limited to under
    /// these options: the one place where option values become the search's limits (a front
    /// end adds only what is its own, such as a stated length or a log).
    pub fn limits(
        &self,
        stipulation: Stipulation,
        time: Option<std::time::Duration>,
    ) -> crate::search::Limits {
        crate::search::Limits {
            stipulation,
            time,
            max_plies: self.max_plies(),
            solution_limit: self.solution_limit,
            threads: self.threads,
            disk: self.disk_budget(),
            checkpoint: self.checkpointing(),
            ..Default::default()
        }
    }

    /// The fairy conditions the options set.
    pub fn conditions(&self) -> Conditions {
        Conditions {
            piece_moves: self.piece_moves,
            pawn_drop_mate: self.pawn_drop_mate,
            captures: self.captures,
            capture_rule: self.capture_rule,
            paralysis: self.paralysis,
        }
    }
}

/// A value read the way its USI option reads it.
fn from_text<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    String::deserialize(d)?
        .parse()
        .map_err(serde::de::Error::custom)
}

/// `Stipulation = "H#"` or `"HS#"` (or a name composers write, without 受先: that is
/// `DefenderFirst`).
fn goal_name<'de, D: Deserializer<'de>>(d: D) -> Result<Goal, D::Error> {
    let text = String::deserialize(d)?;
    match Stipulation::parse(&text) {
        Ok(s) if !s.conditions.is_none() => Err(serde::de::Error::custom(
            "Stipulation names the goal (H# or HS#); conditions are PieceMoves, CaptureRule, Paralysis, PawnDropMate and Captures",
        )),
        Ok(s) if !s.defender_first => Ok(s.goal),
        Ok(_) => Err(serde::de::Error::custom(
            "Stipulation names the goal (H# or HS#); the defender moving first is DefenderFirst = true",
        )),
        Err(e) => Err(serde::de::Error::custom(e)),
    }
}

/// The machine's logical cores (1 if the system does not say), at most `MAX_THREADS`.
pub fn logical_cores() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_THREADS)
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    options: EngineConfig,
}

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: {option} = {value} is out of range {min}..={max}")]
    Range {
        path: PathBuf,
        option: &'static str,
        value: usize,
        min: usize,
        max: usize,
    },
}

impl EngineConfig {
    /// Parses the text of an `engine.toml`; `path` only names it in errors.
    pub fn from_toml(text: &str, path: &Path) -> Result<EngineConfig, ConfigError> {
        let file: ConfigFile = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.message().to_string(),
        })?;
        let mut c = file.options;
        for dir in [&mut c.temp_dir, &mut c.checkpoint_dir] {
            if dir.as_ref().is_some_and(|d| d.as_os_str().is_empty()) {
                *dir = None;
            }
        }
        let check = |option, value, min, max| {
            if (min..=max).contains(&value) {
                Ok(())
            } else {
                Err(ConfigError::Range {
                    path: path.to_path_buf(),
                    option,
                    value,
                    min,
                    max,
                })
            }
        };
        check("USI_Hash", c.hash_mb, 1, MAX_HASH_MB)?;
        check("Threads", c.threads, 1, MAX_THREADS)?;
        check("SolutionLimit", c.solution_limit, 1, MAX_SOLUTION_LIMIT)?;
        check("DiskCap", c.disk_cap_mb, 0, MAX_DISK_CAP_MB)?;
        check(
            "CheckpointMinutes",
            c.checkpoint_minutes,
            0,
            MAX_CHECKPOINT_MINUTES,
        )?;
        check("MaxPlies", c.max_plies, 0, MAX_MAX_PLIES)?;
        Ok(c)
    }

    pub fn load_file(path: &Path) -> Result<EngineConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        EngineConfig::from_toml(&text, path)
    }

    /// Where and how much a breadth-first pass may write (see `DiskCap`, `TempDir`).
    pub fn disk_budget(&self) -> crate::search::DiskBudget {
        crate::search::DiskBudget {
            dir: self.temp_dir.clone(),
            cap_bytes: (self.disk_cap_mb as u64) << 20,
            always: false,
        }
    }

    /// The engine's checkpoints (`CheckpointDir`, `CheckpointMinutes`), if any: a search goes
    /// on from its problem's checkpoint when there is one.
    pub fn checkpointing(&self) -> Option<crate::search::Checkpointing> {
        Some(crate::search::Checkpointing {
            dir: self.checkpoint_dir.clone()?,
            every: std::time::Duration::from_secs(self.checkpoint_minutes as u64 * 60),
            start: crate::search::CheckpointStart::Either,
        })
    }

    /// The explicit file if given, else the first `engine.toml` found next to the executable
    /// or in the current directory, else built-in defaults.
    pub fn load(explicit: Option<&Path>) -> Result<EngineConfig, ConfigError> {
        if let Some(p) = explicit {
            return EngineConfig::load_file(p);
        }
        let beside_exe = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(|d| d.join("engine.toml")));
        let candidates = beside_exe.into_iter().chain([PathBuf::from("engine.toml")]);
        for path in candidates {
            if path.is_file() {
                return EngineConfig::load_file(&path);
            }
        }
        Ok(EngineConfig::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_values_and_rejects_mistakes() {
        let p = Path::new("engine.toml");
        let c = EngineConfig::from_toml("[options]\nUSI_Hash = 64\n", p).unwrap();
        assert_eq!(c.hash_mb, 64);
        // Left out: every logical core.
        assert_eq!(c.threads, logical_cores());
        assert!(c.threads >= 1);
        let c = EngineConfig::from_toml("[options]\nThreads = 3\n", p).unwrap();
        assert_eq!(c.threads, 3);
        let c = EngineConfig::from_toml("[options]\nTempDir = \"/var/tmp\"\nDiskCap = 0\n", p);
        let c = c.unwrap();
        assert_eq!(c.temp_dir.as_deref(), Some(Path::new("/var/tmp")));
        assert_eq!(c.disk_budget().cap_bytes, 0);
        let c = EngineConfig::from_toml("[options]\nTempDir = \"\"\n", p).unwrap();
        assert_eq!(c.temp_dir, None);
        assert_eq!(
            c.disk_budget().cap_bytes,
            (DEFAULT_DISK_CAP_MB as u64) << 20
        );
        assert_eq!(
            EngineConfig::from_toml("", p).unwrap(),
            EngineConfig::default()
        );
        assert!(matches!(
            EngineConfig::from_toml("[options]\nUSI_Hsh = 64\n", p),
            Err(ConfigError::Parse { .. })
        ));
        assert!(matches!(
            EngineConfig::from_toml("[options]\nUSI_Hash = 0\n", p),
            Err(ConfigError::Range { .. })
        ));
        let c = EngineConfig::from_toml("[options]\nMaxPlies = 9\n", p).unwrap();
        assert_eq!(c.max_plies(), Some(9));
        assert_eq!(EngineConfig::default().max_plies(), None);
        assert!(matches!(
            EngineConfig::from_toml("[options]\nMaxPlies = 65536\n", p),
            Err(ConfigError::Range { .. })
        ));
        assert!(matches!(
            EngineConfig::from_toml("[options]\nUSI_Hash = \"big\"\n", p),
            Err(ConfigError::Parse { .. })
        ));
    }

    #[test]
    fn shipped_engine_toml_is_valid() {
        let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/engine.toml"));
        EngineConfig::load_file(path).unwrap();
    }
}
