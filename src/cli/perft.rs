//! `kyozume perft`: counts the leaves of the legal-move tree, under normal rules or a fairy
//! condition (the move generator's test against published counts, and its benchmark).

use super::bad_input;
use crate::shogi::conditions::Conditions;
use crate::shogi::perft::{divide_rules, perft_rules};
use crate::shogi::{Position, RuleSet};
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
pub struct PerftArgs {
    /// Depth in plies.
    pub depth: u32,
    /// Position to start from (default: the initial position).
    #[arg(long)]
    pub sfen: Option<String>,
    /// Print the count below each root move.
    #[arg(long)]
    pub divide: bool,
    /// Play every last-ply move instead of counting generated moves.
    #[arg(long)]
    pub no_bulk: bool,
    /// Fairy conditions as composers write them (安南, 安北, 対面, 背面, キルケ, アンチキルケ,
    /// PWC, マドラシ, Kマドラシ, 打歩詰可, 強欲, 禁欲, combined as printed: 安南キルケ) or the
    /// USI options' values (Annan, Circe, Madrasi, Greedy). Each file-5 choice of a
    /// キルケ or アンチキルケ capture counts as a move.
    #[arg(long, value_name = "TEXT")]
    pub rules: Option<String>,
}

pub fn run(args: &PerftArgs) -> Result<ExitCode, ExitCode> {
    const COMMAND: &str = "kyozume perft";
    let rules = RuleSet::new(conditions(args.rules.as_deref())?);
    let mut pos = match &args.sfen {
        None => Position::startpos(),
        Some(s) => Position::from_sfen_under(s, rules)
            .map_err(|e| bad_input(COMMAND, format!("invalid --sfen: {e}")))?,
    };
    let bulk = !args.no_bulk;
    let start = Instant::now();
    let mut text = String::new();
    let nodes = if args.divide && args.depth > 0 {
        let parts = divide_rules(&mut pos, args.depth, bulk, rules);
        for (m, n) in &parts {
            text += &format!("{m}: {n}\n");
        }
        parts.iter().map(|(_, n)| n).sum()
    } else {
        perft_rules(&mut pos, args.depth, bulk, rules)
    };
    let secs = start.elapsed().as_secs_f64();
    text += &format!("Nodes searched: {nodes}\n");
    crate::workbench::write_stdout(&text, COMMAND).map_err(ExitCode::from)?;
    eprintln!(
        "time {:.3} s, {:.2} M nodes/s{}",
        secs,
        nodes as f64 / secs.max(1e-9) / 1e6,
        if bulk {
            " (bulk counting at the last ply)"
        } else {
            ""
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// `--rules`: conditions only (perft knows no stipulation).
fn conditions(rules: Option<&str>) -> Result<Conditions, ExitCode> {
    match rules.map(Conditions::parse_prefix) {
        None => Ok(Conditions::NONE),
        Some(Ok((c, ""))) => Ok(c),
        Some(Ok((_, rest))) => Err(bad_input(
            "kyozume perft",
            format!("--rules: '{rest}' is not a condition"),
        )),
        Some(Err(e)) => Err(bad_input("kyozume perft", format!("--rules: {e}"))),
    }
}
