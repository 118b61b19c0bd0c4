//! `kyozume serve`'s JSON API, through HTTP against the real binary: it answers as `kyozume
//! solve --json` does (77 problems of `tests/data/serve_api.tsv` across the rules), its
//! `positions` are the lines played under the rules, bad requests answer 400 at once with the
//! command line's words and leave the server serving, one solve runs at a time, `stop` ends
//! one, and progress comes as server-sent events.

use kyozume::problem::play_moves;
use kyozume::shogi::stipulation::verify_solution;
use kyozume::shogi::{Position, Stipulation};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

const HASH_MB: u64 = 64;

/// A server on a free port, ended when dropped.
struct Server {
    child: Child,
    url: String,
    agent: ureq::Agent,
    // Kept open: the server's stdout.
    _stdout: BufReader<ChildStdout>,
}

impl Server {
    fn start() -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kyozume"))
            .args(["serve", "--port", "0", "--threads", "1"])
            .args(["--hash", &HASH_MB.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .expect("kyozume serve starts");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .trim_end_matches('/')
            .to_string();
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(120)))
            .build()
            .into();
        Server {
            child,
            url,
            agent,
            _stdout: stdout,
        }
    }

    /// POSTs `body` (as is) to `path`: the status and the JSON answer.
    fn post(&self, path: &str, body: impl Into<String>) -> (u16, Value) {
        let mut response = self
            .agent
            .post(&format!("{}{path}", self.url))
            .header("content-type", "application/json")
            .send(body.into())
            .expect("the server answers");
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().unwrap();
        let value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        (status, value)
    }

    fn solve(&self, request: &Value) -> (u16, Value) {
        self.post("/api/solve", request.to_string())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Row {
    rules: String,
    name: String,
    sfen: String,
    bound: Option<u32>,
}

fn rows() -> Vec<Row> {
    let text = std::fs::read_to_string("tests/data/serve_api.tsv").unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("rules\t") && !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            Row {
                rules: f[0].to_string(),
                name: f[1].to_string(),
                sfen: f[2].to_string(),
                bound: f[3].parse().ok(),
            }
        })
        .collect()
}

/// `kyozume solve --json` on the same problem: its object and its stderr.
fn cli(args: &[&str]) -> (Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kyozume"))
        .args([
            "solve",
            "--json",
            "--threads",
            "1",
            "--hash",
            &HASH_MB.to_string(),
        ])
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let value = serde_json::from_str(stdout.lines().last().unwrap_or("null")).unwrap();
    (value, String::from_utf8(out.stderr).unwrap())
}

fn lines_of(answer: &Value) -> Vec<Vec<String>> {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap().to_string())
            .collect()
    };
    let mut lines = vec![strings(&answer["moves"])];
    lines.extend(
        answer["alternatives"]
            .as_array()
            .unwrap()
            .iter()
            .map(strings),
    );
    lines.retain(|l| !l.is_empty());
    lines
}

#[test]
fn the_api_answers_as_the_command_line_does_and_its_positions_are_the_lines_played() {
    let server = Server::start();
    let rows = rows();
    assert!(rows.len() >= 50, "{}", rows.len());
    let mut mates = 0;
    for row in &rows {
        let mut request = json!({ "sfen": row.sfen, "rules": row.rules });
        let bound = row.bound.map(|b| b.to_string());
        let mut args = vec!["--rules", &row.rules];
        if let Some(b) = &bound {
            request["max_plies"] = json!(row.bound);
            args.extend(["--max-plies", b]);
        }
        args.push(&row.sfen);
        let (status, api) = server.solve(&request);
        assert_eq!(status, 200, "{}: {api}", row.name);
        let (cli, _) = cli(&args);
        for field in [
            "sfen",
            "stipulation",
            "status",
            "max_plies",
            "verdict",
            "plies",
            "solutions",
            "complete",
            "unique",
        ] {
            assert_eq!(api[field], cli[field], "{}: {field}", row.name);
        }
        // The lines: the same when the count is whole (which ones a capped count keeps
        // follows the mate the search met first, which a warm table may change).
        let (api_lines, cli_lines) = (lines_of(&api), lines_of(&cli));
        if api["complete"] == json!(true) {
            let sorted = |mut l: Vec<Vec<String>>| {
                l.sort();
                l
            };
            assert_eq!(sorted(api_lines.clone()), sorted(cli_lines), "{}", row.name);
        }
        let stipulation = Stipulation::parse_rules(&row.rules).unwrap();
        let root = Position::from_sfen(&row.sfen).unwrap();
        let mut all_positions = vec![api["positions"].clone()];
        all_positions.extend(
            api["alternative_positions"]
                .as_array()
                .unwrap()
                .iter()
                .cloned(),
        );
        assert_eq!(
            all_positions.len().max(1),
            api_lines.len().max(1),
            "{}",
            row.name
        );
        for (line, positions) in api_lines.iter().zip(&all_positions) {
            let positions = positions.as_array().unwrap();
            assert_eq!(positions.len(), line.len(), "{}", row.name);
            for (ply, sfen) in positions.iter().enumerate() {
                let played = play_moves(root.clone(), &line[..=ply], stipulation.rules())
                    .unwrap_or_else(|e| panic!("{}: {e}", row.name));
                assert_eq!(
                    sfen.as_str().unwrap(),
                    played.to_sfen(),
                    "{} ply {ply}",
                    row.name
                );
            }
            let mut pos = root.clone();
            stipulation.rules().adopt(&mut pos);
            let moves: Vec<_> = line
                .iter()
                .map(|text| {
                    let m = pos.parse_move_under(text, stipulation.rules()).unwrap();
                    pos.do_move(m);
                    m
                })
                .collect();
            verify_solution(&root, stipulation, &moves)
                .unwrap_or_else(|e| panic!("{}: {e}", row.name));
        }
        if api["status"] == json!("mate") {
            mates += 1;
            let checks = api["checkers"][0].as_array().unwrap();
            assert_eq!(checks.len(), api_lines[0].len(), "{}", row.name);
            assert!(
                api["kif"].as_str().unwrap().contains("まで"),
                "{}",
                row.name
            );
        }
        // The process stays within USI_Hash + 64 MB + 64 MB a thread (docs/usi.md).
        if let Some(peak) = api["peak_mb"].as_u64() {
            assert!(peak <= HASH_MB + 128, "{}: {peak} MB", row.name);
        }
    }
    assert!(mates >= 40, "{mates}");
}

#[test]
fn bad_requests_answer_400_at_once_with_the_command_lines_words() {
    let server = Server::start();
    let lone_king = "4k4/9/9/9/9/9/9/9/9 b 2G2r2b2g4s4n4l18p 1";
    let cases: Vec<(String, Option<Vec<&str>>)> = vec![
        ("{not json".into(), None),
        ("[1, 2]".into(), None),
        (json!({ "sfen": 7 }).to_string(), None),
        (
            json!({ "sfen": lone_king, "colour": "red" }).to_string(),
            None,
        ),
        (json!({ "rules": "H#" }).to_string(), None),
        (
            json!({ "sfen": "9/9/9 b - 1" }).to_string(),
            Some(vec!["9/9/9 b - 1"]),
        ),
        (json!({ "sfen": "garbage" }).to_string(), None),
        (
            json!({ "sfen": lone_king, "rules": "ばか詰め放題" }).to_string(),
            Some(vec!["--rules", "ばか詰め放題", lone_king]),
        ),
        (
            json!({ "sfen": lone_king, "rules": "安南安北" }).to_string(),
            Some(vec!["--rules", "安南安北", lone_king]),
        ),
        (
            json!({ "sfen": lone_king, "plies": 4 }).to_string(),
            Some(vec!["--plies", "4", lone_king]),
        ),
        (
            json!({ "sfen": "9/9/9/9/9/9/9/9/9 b G 1" }).to_string(),
            Some(vec!["9/9/9/9/9/9/9/9/9 b G 1"]),
        ),
        (
            json!({ "sfen": lone_king, "solutions": 0 }).to_string(),
            None,
        ),
        (
            json!({ "sfen": lone_king, "max_plies": -3 }).to_string(),
            None,
        ),
        (
            json!({ "sfen": lone_king, "time_limit": -1 }).to_string(),
            None,
        ),
    ];
    for (body, cli_args) in cases {
        let start = Instant::now();
        let (status, answer) = server.post("/api/solve", body.clone());
        let shown = &body[..body.len().min(80)];
        assert_eq!(status, 400, "{shown}: {answer}");
        assert!(start.elapsed() < Duration::from_secs(2), "{shown}");
        let message = answer["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{answer}"));
        assert!(!message.is_empty(), "{shown}");
        if let Some(args) = cli_args {
            let (_, stderr) = cli(&args);
            // The command line says `kyozume solve: [--rules: ]message`.
            let said = stderr.trim().trim_start_matches("kyozume solve: ");
            let said = said.trim_start_matches("--");
            assert_eq!(message, said, "{shown}");
        }
    }
    // 4 MB: answered 400 before it is all sent. (The server stops reading at 256 KB and may
    // close the connection, so the client must read the answer whatever its writing met.)
    let start = Instant::now();
    let answer = post_raw(&server.url, "/api/solve", &"x".repeat(4 << 20));
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("larger than 256 KB"), "{answer}");
    assert!(start.elapsed() < Duration::from_secs(2));
    // Still serving, and right.
    let (status, answer) = server.solve(&json!({ "sfen": "4k4/9/4G4/9/9/9/9/9/9 b G 1" }));
    assert_eq!(status, 200);
    assert_eq!(answer["plies"], json!(1));
}

/// POSTs `body` over a plain socket, writing what the server takes, and returns the answer.
fn post_raw(url: &str, path: &str, body: &str) -> String {
    use std::io::{Read, Write};
    let address = url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n",
        body.len()
    );
    let _ = stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body.as_bytes()));
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    // Up to the end of the JSON answer (or of the connection).
    while let Ok(n) = stream.read(&mut chunk) {
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&chunk[..n]);
        if answer.ends_with(b"}") {
            break;
        }
    }
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn one_solve_at_a_time_and_stop_ends_it_with_what_it_has() {
    let server = Server::start();
    // 協力自玉詰 with no solution within 30 s of searching (the stated-length issue's example).
    let long = json!({ "sfen": "2K2s3/2Pgk4/9/7P1/6G2/9/9/9/9 b 2Sn 1", "rules": "HS#" });
    std::thread::scope(|s| {
        let first = s.spawn(|| server.solve(&long));
        // Wait until it runs (the progress says so).
        let deadline = Instant::now() + Duration::from_secs(10);
        while !running(&server) {
            assert!(Instant::now() < deadline, "the solve never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        let (status, answer) = server.solve(&json!({ "sfen": "4k4/9/4G4/9/9/9/9/9/9 b G 1" }));
        assert_eq!(status, 409, "{answer}");
        assert!(answer["error"].as_str().unwrap().contains("/api/stop"));
        let (status, answer) = server.post("/api/stop", "");
        assert_eq!((status, &answer["stopping"]), (200, &json!(true)));
        let stopped_at = Instant::now();
        let (status, answer) = first.join().unwrap();
        assert!(stopped_at.elapsed() < Duration::from_secs(2));
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["status"], json!("unsolved"));
    });
    let (status, answer) = server.solve(&json!({ "sfen": "4k4/9/4G4/9/9/9/9/9/9 b G 1" }));
    assert_eq!((status, &answer["plies"]), (200, &json!(1)));
    let (_, answer) = server.post("/api/stop", "");
    assert_eq!(answer["stopping"], json!(false));
    // A client that gives up (here a timeout of half a second) stops its search: the next
    // solve is taken at once.
    let impatient: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_millis(500)))
        .build()
        .into();
    let gave_up = impatient
        .post(&format!("{}/api/solve", server.url))
        .send(long.to_string());
    assert!(
        gave_up.is_err(),
        "the long solve answered within half a second"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (status, answer) = server.solve(&json!({ "sfen": "4k4/9/4G4/9/9/9/9/9/9 b G 1" }));
        if status == 200 {
            assert_eq!(answer["plies"], json!(1));
            break;
        }
        assert_eq!(status, 409, "{answer}");
        assert!(Instant::now() < deadline, "the abandoned solve still runs");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The first progress event says whether a solve runs (server-sent events).
fn running(server: &Server) -> bool {
    let response = server
        .agent
        .get(&format!("{}/api/progress", server.url))
        .call()
        .unwrap();
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    let mut reader = BufReader::new(response.into_body().into_reader());
    let mut event = String::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if let Some(name) = line.strip_prefix("event:") {
            event = name.trim().to_string();
        }
        if let Some(data) = line.strip_prefix("data:") {
            assert_eq!(event, "progress");
            let progress: Value = serde_json::from_str(data.trim()).unwrap();
            return progress["running"] == json!(true);
        }
    }
}

/// The `http` blocks of docs/serve.md, sent as written, answer as written (`"..."` stands for
/// any value; every field the answer has is listed).
#[test]
fn the_examples_of_serve_md_answer_as_written() {
    let server = Server::start();
    let doc = std::fs::read_to_string("docs/serve.md").unwrap();
    let mut lines = doc.lines();
    let mut checked = 0;
    while let Some(line) = lines.next() {
        if line != "```http" {
            continue;
        }
        let block: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.starts_with("```"))
            .collect();
        let (request, answer) = block.split_at(block.iter().position(|l| l.is_empty()).unwrap());
        let path = request[0].strip_prefix("POST ").expect("a POST");
        let body = request[1..].join("\n");
        let status: u16 = answer[1].parse().unwrap();
        let expected: Value = serde_json::from_str(&answer[2..].join("\n")).unwrap();
        let (got_status, got) = server.post(path, body);
        assert_eq!(got_status, status, "{path}: {got}");
        matches(&expected, &got, path);
        checked += 1;
    }
    assert!(checked >= 3, "{checked}");
}

fn matches(expected: &Value, got: &Value, at: &str) {
    match (expected, got) {
        (Value::String(s), _) if s == "..." => {}
        (Value::Object(e), Value::Object(g)) => {
            let keys = |o: &serde_json::Map<String, Value>| o.keys().cloned().collect::<Vec<_>>();
            assert_eq!(keys(e), keys(g), "{at}");
            for (k, v) in e {
                matches(v, &g[k], &format!("{at}.{k}"));
            }
        }
        (Value::Array(e), Value::Array(g)) => {
            assert_eq!(e.len(), g.len(), "{at}: {got}");
            for (i, (e, g)) in e.iter().zip(g).enumerate() {
                matches(e, g, &format!("{at}[{i}]"));
            }
        }
        _ => assert_eq!(expected, got, "{at}"),
    }
}
