//! Helpers shared by the integration tests: the reference data and a USI engine process.

#![allow(dead_code)]

use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub struct Helpmate {
    pub name: String,
    pub sfen: String,
    pub plies: u32,
    /// "1", "2", "2+" or "" (not counted).
    pub solutions: String,
    pub line: Vec<String>,
}

fn data_path(file: &str) -> String {
    format!("{}/tests/data/{file}", env!("CARGO_MANIFEST_DIR"))
}

/// Rows of `tests/data/helpmates.tsv` (copied from the shared reference data).
pub fn helpmates() -> Vec<Helpmate> {
    let text = std::fs::read_to_string(data_path("helpmates.tsv")).expect("helpmates.tsv");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("name\t") && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            Helpmate {
                name: f[0].to_string(),
                sfen: f[1].to_string(),
                plies: f[2].parse().expect("plies"),
                solutions: f[3].to_string(),
                line: f[4].split_whitespace().map(String::from).collect(),
            }
        })
        .collect()
}

/// (name, sfen) rows of `tests/data/nomate.tsv`.
/// The SFEN of the row of `tests/data/helpmates.tsv` named `name`.
pub fn helpmate_sfen(name: &str) -> String {
    helpmates()
        .into_iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no row {name}"))
        .sfen
}

/// Every helpmate row up to `plies` plies, then every no-mate row: (name, SFEN).
pub fn rows_up_to(plies: u32) -> (Vec<(String, String)>, usize) {
    let mut rows: Vec<(String, String)> = helpmates()
        .into_iter()
        .filter(|p| p.plies <= plies)
        .map(|p| (p.name, p.sfen))
        .collect();
    let helpmate_rows = rows.len();
    rows.extend(nomates());
    (rows, helpmate_rows)
}

pub fn nomates() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(data_path("nomate.tsv")).expect("nomate.tsv");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("name\t") && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[0].to_string(), f[1].to_string())
        })
        .collect()
}

/// A `kyozume` process driven over its stdin/stdout.
pub struct Engine {
    child: Child,
    /// Taken by [`Engine::finish`], which closes it.
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

/// The binary with `args`, its stdin and stdout piped to the test.
pub fn spawn_kyozume(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_kyozume"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn kyozume")
}

impl Engine {
    pub fn start() -> Engine {
        Engine::start_with_args(&[])
    }

    pub fn start_with_args(args: &[&str]) -> Engine {
        let mut child = spawn_kyozume(args);
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = unbounded();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                match line {
                    Ok(l) => {
                        if tx.send(l).is_err() {
                            break;
                        }
                    }
                    Err(_) => break,
                }
            }
        });
        Engine {
            child,
            stdin: Some(stdin),
            lines: rx,
        }
    }

    pub fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        writeln!(stdin, "{line}").expect("write to engine");
        stdin.flush().unwrap();
    }

    /// The next output line, or None after `timeout`.
    pub fn next_line(&self, timeout: Duration) -> Option<String> {
        match self.lines.recv_timeout(timeout) {
            Ok(l) => Some(l),
            Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => None,
        }
    }

    /// Lines up to and including the first one for which `done` holds; panics after `timeout`.
    pub fn read_until(&self, timeout: Duration, done: impl Fn(&str) -> bool) -> Vec<String> {
        let deadline = Instant::now() + timeout;
        let mut out = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next_line(left) {
                Some(l) => {
                    let stop = done(&l);
                    out.push(l);
                    if stop {
                        return out;
                    }
                }
                None => panic!("no matching line within {timeout:?}; got {out:?}"),
            }
        }
    }

    /// Sends `isready` and waits for `readyok`, returning the lines before it.
    pub fn sync(&mut self) -> Vec<String> {
        self.send("isready");
        let mut lines = self.read_until(Duration::from_secs(30), |l| l == "readyok");
        lines.pop();
        lines
    }

    /// Sets up `sfen`, runs `go mate <arg>` and returns (all lines, the checkmate line).
    pub fn go_mate(&mut self, sfen: &str, arg: &str, timeout: Duration) -> (Vec<String>, String) {
        self.send(&format!("position sfen {sfen}"));
        self.send(&format!("go mate {arg}"));
        let lines = self.read_until(timeout, |l| l.starts_with("checkmate"));
        let last = lines.last().unwrap().clone();
        (lines, last)
    }

    /// Sends quit and waits for the process to exit; returns how long that took.
    pub fn quit(mut self) -> Duration {
        let start = Instant::now();
        self.send("quit");
        let deadline = start + Duration::from_secs(10);
        loop {
            if let Ok(Some(_)) = self.child.try_wait() {
                return start.elapsed();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("engine did not exit after quit");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Writes `script` at once, closes stdin and returns every line printed until the engine
    /// exits, with its exit status; panics after `timeout`. The engine may leave before the
    /// whole script is written (after a `quit`): a closed pipe is not an error here.
    pub fn finish(mut self, script: &str, timeout: Duration) -> (Vec<String>, ExitStatus) {
        let mut stdin = self.stdin.take().expect("stdin still open");
        let _ = stdin.write_all(script.as_bytes());
        drop(stdin);
        let deadline = Instant::now() + timeout;
        let mut lines = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => lines.push(line),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    panic!("the engine did not exit within {timeout:?}; got {lines:?}")
                }
            }
        }
        let status = self.child.wait().expect("wait for kyozume");
        (lines, status)
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the engine printed for a whole script written to its stdin at once (stdin then
/// closed, nothing waited for), its exit status and how long it ran. Panics after `timeout`.
pub fn run_script(script: &str, timeout: Duration) -> (Vec<String>, ExitStatus, Duration) {
    let start = Instant::now();
    let (lines, status) = Engine::start().finish(script, timeout);
    (lines, status, start.elapsed())
}
