//! USI command lines parsed into typed commands.

use crate::problem::{PositionBase, PositionLine};
use thiserror::Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MateTime {
    Infinite,
    Millis(u64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Usi,
    IsReady,
    SetOption {
        name: String,
        value: Option<String>,
    },
    UsiNewGame,
    Position {
        base: PositionBase,
        moves: Vec<String>,
    },
    GoMate(MateTime),
    /// `go` for a game move: this engine only solves helpmates.
    GoGame,
    Stop,
    PonderHit,
    Quit,
    GameOver,
    /// `d`: print the current position (debugging aid).
    Display,
    /// `probe [startpos | sfen <sfen>] [moves ...]`: what the engine knows about a position
    /// (`base` None: the current position, the moves played from it). An extension for
    /// composers; GUIs never send it.
    Probe {
        base: Option<PositionBase>,
        moves: Vec<String>,
    },
    /// An empty line: ignored.
    Nothing,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CommandError {
    #[error("unknown command '{0}'")]
    Unknown(String),
    #[error("{0}")]
    Syntax(String),
}

fn syntax(msg: impl Into<String>) -> CommandError {
    CommandError::Syntax(msg.into())
}

impl Command {
    pub fn parse(line: &str) -> Result<Command, CommandError> {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let Some((&head, rest)) = tokens.split_first() else {
            return Ok(Command::Nothing);
        };
        let no_args = |c: Command| {
            if rest.is_empty() || matches!(c, Command::GameOver | Command::Stop | Command::Quit) {
                Ok(c)
            } else {
                Err(syntax(format!("'{head}' takes no arguments")))
            }
        };
        match head {
            "usi" => no_args(Command::Usi),
            "isready" => no_args(Command::IsReady),
            "usinewgame" => no_args(Command::UsiNewGame),
            "stop" => no_args(Command::Stop),
            "ponderhit" => Ok(Command::PonderHit),
            "quit" => no_args(Command::Quit),
            "gameover" => no_args(Command::GameOver),
            "d" => no_args(Command::Display),
            "setoption" => parse_setoption(rest),
            "position" => parse_position(rest),
            "probe" => parse_probe(rest),
            "go" => parse_go(rest),
            other => Err(CommandError::Unknown(other.chars().take(40).collect())),
        }
    }
}

fn parse_setoption(rest: &[&str]) -> Result<Command, CommandError> {
    if rest.first() != Some(&"name") {
        return Err(syntax("expected 'setoption name <id> [value <x>]'"));
    }
    let rest = &rest[1..];
    let value_at = rest.iter().position(|&t| t == "value");
    let (name_tokens, value) = match value_at {
        Some(i) => (&rest[..i], Some(rest[i + 1..].join(" "))),
        None => (rest, None),
    };
    if name_tokens.is_empty() {
        return Err(syntax("setoption: missing option name"));
    }
    Ok(Command::SetOption {
        name: name_tokens.join(" "),
        value,
    })
}

fn parse_position(rest: &[&str]) -> Result<Command, CommandError> {
    let PositionLine { base, moves } = PositionLine::parse_words(rest).map_err(syntax)?;
    Ok(Command::Position { base, moves })
}

fn parse_probe(rest: &[&str]) -> Result<Command, CommandError> {
    match rest.split_first() {
        None => Ok(Command::Probe {
            base: None,
            moves: Vec::new(),
        }),
        Some((&"moves", moves)) => Ok(Command::Probe {
            base: None,
            moves: moves.iter().map(|s| s.to_string()).collect(),
        }),
        Some(_) => match parse_position(rest) {
            Ok(Command::Position { base, moves }) => Ok(Command::Probe {
                base: Some(base),
                moves,
            }),
            _ => Err(syntax(
                "expected 'probe [startpos|sfen <sfen>] [moves ...]' or 'probe moves ...'",
            )),
        },
    }
}

fn parse_go(rest: &[&str]) -> Result<Command, CommandError> {
    match rest {
        ["mate"] | ["mate", "infinite"] => Ok(Command::GoMate(MateTime::Infinite)),
        ["mate", ms] => ms
            .parse::<u64>()
            .map(|ms| Command::GoMate(MateTime::Millis(ms)))
            .map_err(|_| {
                syntax(format!(
                    "go mate: expected milliseconds or 'infinite', got '{ms}'"
                ))
            }),
        ["mate", ..] => Err(syntax(
            "go mate takes one argument: <milliseconds> or 'infinite'",
        )),
        _ => Ok(Command::GoGame),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands() {
        assert_eq!(Command::parse("usi"), Ok(Command::Usi));
        assert_eq!(Command::parse("  "), Ok(Command::Nothing));
        assert_eq!(
            Command::parse("setoption name USI_Hash value 128"),
            Ok(Command::SetOption {
                name: "USI_Hash".into(),
                value: Some("128".into())
            })
        );
        assert_eq!(
            Command::parse("setoption name Clear Hash"),
            Ok(Command::SetOption {
                name: "Clear Hash".into(),
                value: None
            })
        );
        assert_eq!(
            Command::parse("position startpos moves 7g7f 3c3d"),
            Ok(Command::Position {
                base: PositionBase::Startpos,
                moves: vec!["7g7f".into(), "3c3d".into()]
            })
        );
        assert_eq!(
            Command::parse("position sfen 4k4/9/9/9/9/9/9/9/9 b G 1"),
            Ok(Command::Position {
                base: PositionBase::Sfen("4k4/9/9/9/9/9/9/9/9 b G 1".into()),
                moves: vec![]
            })
        );
        assert_eq!(
            Command::parse("go mate"),
            Ok(Command::GoMate(MateTime::Infinite))
        );
        assert_eq!(
            Command::parse("go mate infinite"),
            Ok(Command::GoMate(MateTime::Infinite))
        );
        assert_eq!(
            Command::parse("go mate 200"),
            Ok(Command::GoMate(MateTime::Millis(200)))
        );
        assert_eq!(
            Command::parse("go btime 0 wtime 0 byoyomi 1000"),
            Ok(Command::GoGame)
        );
        assert!(matches!(
            Command::parse("go mate soon"),
            Err(CommandError::Syntax(_))
        ));
        assert!(matches!(
            Command::parse("position"),
            Err(CommandError::Syntax(_))
        ));
        assert!(matches!(
            Command::parse("position sfen"),
            Err(CommandError::Syntax(_))
        ));
        assert!(matches!(
            Command::parse("setoption USI_Hash"),
            Err(CommandError::Syntax(_))
        ));
        assert!(matches!(
            Command::parse("isready now"),
            Err(CommandError::Syntax(_))
        ));
        assert_eq!(
            Command::parse("hello"),
            Err(CommandError::Unknown("hello".into()))
        );
    }
}
