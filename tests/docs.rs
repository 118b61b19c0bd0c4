//! Every command in README.md, CONTRIBUTING.md and docs/*.md, run as written, so that a doc that drifts from the
//! binary fails the tests.
//!
//! In a fenced block marked `console`, each `$ command` runs in a shell (from the repository's
//! root, `kyozume` on the PATH, stderr with stdout) and what follows it, up to the next `$`, is
//! its output: `...` alone on a line stands for any lines and `[..]` for any text within one,
//! for figures that vary (time, nodes, memory). A block marked `sh` is a list of commands that
//! must each succeed (exit status 0, or 1 for a proven "no helpmate"); a block marked
//! `sh no-run` holds commands too long or too big for a test (runs of hours, MPI jobs): their
//! arguments are checked against the command line's parser. A block marked `usi` is a session
//! with the engine: its `> ` lines are sent to `kyozume` (all at once, as a script), the others
//! are what it answers. `cargo run --release --` stands for `kyozume`; other `cargo` commands
//! are what CI itself runs.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A command of a doc, where it stands, and what the doc says it prints (console blocks).
struct Example {
    place: String,
    command: String,
    kind: Kind,
    output: String,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Console,
    Succeeds,
    ParseOnly,
    Usi,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn docs() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md"), root().join("CONTRIBUTING.md")];
    let mut in_docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    in_docs.sort();
    files.extend(in_docs);
    files
}

/// `cargo run --release -- ARGS` as `kyozume ARGS`; None for another cargo command.
fn as_kyozume(command: &str) -> Option<String> {
    match command.strip_prefix("cargo run --release --") {
        Some(rest) => Some(format!("kyozume{rest}")),
        None if command.starts_with("cargo ") => None,
        None => Some(command.to_string()),
    }
}

/// The examples of one doc.
fn examples(path: &Path) -> Vec<Example> {
    let text = std::fs::read_to_string(path).unwrap();
    let name = path.strip_prefix(root()).unwrap().display().to_string();
    let mut examples = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((_, line)) = lines.next() {
        let Some(info) = line.strip_prefix("```") else {
            continue;
        };
        let kind = match info.trim() {
            "console" => Some(Kind::Console),
            "sh" => Some(Kind::Succeeds),
            "sh no-run" => Some(Kind::ParseOnly),
            "usi" => Some(Kind::Usi),
            _ => None,
        };
        let mut block = Vec::new();
        for (i, l) in lines.by_ref() {
            if l.starts_with("```") {
                break;
            }
            block.push((i + 1, l));
        }
        let Some(kind) = kind else { continue };
        if kind == Kind::Usi {
            let (input, output): (Vec<&str>, Vec<&str>) = block
                .iter()
                .map(|(_, l)| *l)
                .partition(|l| l.starts_with("> "));
            let input: Vec<&str> = input.iter().map(|l| &l[2..]).collect();
            examples.push(Example {
                place: format!("{name}:{}", block.first().map_or(0, |b| b.0)),
                command: format!("kyozume <<'EOF'\n{}\nEOF", input.join("\n")),
                kind,
                output: output.iter().map(|l| format!("{l}\n")).collect(),
            });
            continue;
        }
        let mut i = 0;
        while i < block.len() {
            let (at, l) = block[i];
            i += 1;
            let command_text = match kind {
                Kind::Console => match l.strip_prefix("$ ") {
                    Some(c) => c.to_string(),
                    None => panic!("{name}:{at}: output before any command"),
                },
                _ => match l.split(" # ").next().unwrap().trim() {
                    "" => continue,
                    c if c.starts_with('#') => continue,
                    c => c.to_string(),
                },
            };
            let mut command = command_text;
            // Continued lines, and a here-document up to its end marker.
            while command.ends_with('\\') && i < block.len() {
                command.pop();
                command.push_str(block[i].1.trim_start());
                i += 1;
            }
            if let Some(marker) = command
                .split("<<'")
                .nth(1)
                .and_then(|m| m.split('\'').next())
            {
                let marker = marker.to_string();
                while i < block.len() {
                    let body = block[i].1;
                    i += 1;
                    command.push('\n');
                    command.push_str(body);
                    if body == marker {
                        break;
                    }
                }
            }
            let mut output = String::new();
            if kind == Kind::Console {
                while i < block.len() && !block[i].1.starts_with("$ ") {
                    output.push_str(block[i].1);
                    output.push('\n');
                    i += 1;
                }
            }
            if let Some(command) = as_kyozume(&command) {
                examples.push(Example {
                    place: format!("{name}:{at}"),
                    command,
                    kind,
                    output,
                });
            }
        }
    }
    examples
}

/// Runs a shell command the way a reader would, from the repository's root.
fn shell(command: &str) -> (i32, String) {
    let bin = Path::new(env!("CARGO_BIN_EXE_kyozume")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("exec 2>&1\n{command}"))
        .current_dir(root())
        .env("PATH", path)
        .output()
        .expect("run sh");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The `kyozume` arguments of a command line that starts it directly or through an MPI
/// launcher (`mpirun ... kyozume ...`, `srun ... kyozume ...`).
fn kyozume_arguments(command: &str) -> Option<Vec<String>> {
    let words = shell_words::split(command).ok()?;
    let at = words
        .iter()
        .position(|w| w == "kyozume" || w.ends_with("/kyozume"))?;
    Some(words[at..].to_vec())
}

fn check(example: &Example) -> Result<(), String> {
    let Example { place, command, .. } = example;
    match example.kind {
        Kind::ParseOnly => {
            let Some(args) = kyozume_arguments(command) else {
                // A script of the repository's own (`fuzz/run 600`) is there, at least.
                let program = command.split_whitespace().next().unwrap_or_default();
                return match root().join(program).is_file() {
                    true => Ok(()),
                    false => Err(format!(
                        "{place}: `{command}` runs neither kyozume nor a script of the repository"
                    )),
                };
            };
            <kyozume::cli::Cli as clap::Parser>::try_parse_from(&args)
                .map(drop)
                .map_err(|e| format!("{place}: `{command}`: {e}"))
        }
        Kind::Succeeds => match shell(command) {
            (0 | 1, _) => Ok(()),
            (code, out) => Err(format!("{place}: `{command}` exited {code}:\n{out}")),
        },
        Kind::Console | Kind::Usi => {
            let (_, out) = shell(command);
            snapbox::Assert::new()
                .try_eq(
                    Some(&format!("{place}: `{command}`")),
                    out.into(),
                    example.output.clone().into(),
                )
                .map_err(|e| format!("{place}: `{command}`:\n{e}"))
        }
    }
}

#[test]
fn every_documented_command_runs_as_written() {
    let examples: Vec<Example> = docs().iter().flat_map(|p| examples(p)).collect();
    assert!(
        examples.len() >= 30,
        "only {} examples found",
        examples.len()
    );
    println!("{} documented commands", examples.len());
    let failures: Vec<String> = examples.iter().filter_map(|e| check(e).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} documented commands do not do what their doc says:\n\n{}",
        failures.len(),
        examples.len(),
        failures.join("\n\n")
    );
}

/// The files the docs' commands use are in the repository.
#[test]
fn the_examples_directory_holds_a_problem_in_each_format() {
    for file in [
        "problem.sfen",
        "problem.kif",
        "problem.bod",
        "problems.tsv",
        "hs14.kif",
        "annan.bod",
        "session.usi",
    ] {
        assert!(
            root().join("examples").join(file).is_file(),
            "examples/{file}"
        );
    }
}

/// The README names the Rust that Cargo.toml's `rust-version` asks for (the oldest the locked
/// dependencies build with).
#[test]
fn the_readme_names_the_rust_version_cargo_asks_for() {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let version = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .expect("rust-version in Cargo.toml");
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(
        readme.contains(&format!("stable Rust {version} or newer")),
        "README.md does not say 'stable Rust {version} or newer'"
    );
}
