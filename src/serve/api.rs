//! The JSON API (`docs/serve.md`): `POST /api/solve`, `GET /api/progress` (server-sent events),
//! `POST /api/stop`, `POST /api/parse`, and the page's files.
//!
//! Every request body is read whole up to [`MAX_BODY_BYTES`] and parsed here, so that every bad
//! request (not JSON, a field of the wrong kind, an unknown field, a bad position, unknown
//! rules, a body too big) answers 400 with one `{"error": ...}` message, the command line's
//! words where it has them.

use super::engine::{Engine, Job, ProgressEvent, Refused};
use super::{page, MAX_BODY_BYTES};
use crate::config::{EngineConfig, MAX_MAX_PLIES, MAX_SOLUTION_LIMIT};
use crate::problem::{self, Format, Length};
use crate::report::{RecordFormat, Report, Status};
use crate::shogi::Stipulation;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use std::convert::Infallible;
use std::time::Duration;

#[derive(Clone)]
struct App {
    engine: Engine,
    defaults: EngineConfig,
}

/// The routes, over `engine`, with `defaults` for what a request leaves out.
pub fn router(engine: Engine, defaults: EngineConfig) -> Router {
    Router::new()
        .route("/", get(page::index))
        .route("/app.js", get(page::script))
        .route("/style.css", get(page::style))
        .route("/api/solve", post(solve))
        .route("/api/parse", post(parse))
        .route("/api/stop", post(stop))
        .route("/api/progress", get(progress))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(App { engine, defaults })
}

/// A 400 (or other) answer: `{"error": message}`.
fn error(status: StatusCode, message: impl Into<String>) -> Response {
    #[derive(Serialize)]
    struct Error {
        error: String,
    }
    let error = Error {
        error: message.into(),
    };
    (status, Json(error)).into_response()
}

fn bad_request(message: impl Into<String>) -> Response {
    error(StatusCode::BAD_REQUEST, message)
}

/// The body as `T`, or why not (a 400's message).
fn read_body<T: for<'de> Deserialize<'de>>(
    body: Result<Bytes, BytesRejection>,
) -> Result<T, String> {
    let bytes = body.map_err(|e| match e {
        BytesRejection::FailedToBufferBody(_) => {
            format!("the request is larger than {} KB", MAX_BODY_BYTES / 1024)
        }
        other => other.body_text(),
    })?;
    serde_json::from_slice(&bytes).map_err(|e| format!("bad request: {e}"))
}

/// `POST /api/solve`'s body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SolveRequest {
    /// The problem: an SFEN, a `position ...` line, a BOD diagram or a KIF text.
    sfen: String,
    /// The rules as `kyozume solve --rules` reads them (`協力自玉詰`, `安南ばか詰 11手`,
    /// `Annan HS#`); left out: what the text names, else engine.toml's.
    #[serde(default)]
    rules: Option<String>,
    /// Solutions of at most this many plies (0: no bound).
    #[serde(default)]
    max_plies: Option<u32>,
    /// The stated length: searched within it and judged against it.
    #[serde(default)]
    plies: Option<u32>,
    /// Shortest solutions to count (1: no uniqueness check).
    #[serde(default)]
    solutions: Option<usize>,
    /// Give up after this many seconds.
    #[serde(default)]
    time_limit: Option<f64>,
}

/// The answer: `kyozume solve --json`'s object, and the lines as the page replays them.
#[derive(Serialize)]
struct SolveAnswer {
    #[serde(flatten)]
    report: Report,
    /// The SFEN after each ply of the solution given, under the problem's rules.
    positions: Vec<String>,
    /// The same for each of `alternatives`.
    alternative_positions: Vec<Vec<String>>,
    /// After each ply of each line (the solution given, then the alternatives): the squares
    /// of the pieces checking the side to move's king.
    checkers: Vec<Vec<Vec<String>>>,
    /// Each line in Japanese notation: the solution given, then the alternatives.
    lines_japanese: Vec<String>,
    /// The solution as a KIF record.
    kif: Option<String>,
}

/// What a request asks to solve, checked: the job, or what is wrong (a 400's message).
fn job_of(
    request: SolveRequest,
    defaults: &EngineConfig,
) -> Result<(Job, tokio::sync::oneshot::Receiver<Report>), String> {
    let (given, rules_length) = match request.rules.as_deref().map(str::trim) {
        None | Some("") => (None, None),
        Some(text) => match Stipulation::parse_stated(text) {
            Ok((s, n)) => (Some(s), n),
            Err(e) => return Err(format!("rules: {e}")),
        },
    };
    let format = Format::Auto;
    let (position, stipulation) =
        problem::parse_problem_and_stipulation(&request.sfen, format, |named| {
            given.or(named).unwrap_or(defaults.stipulation())
        })
        .map_err(|e| e.to_string())?;
    if let Some(n) = request.max_plies.filter(|&n| n as usize > MAX_MAX_PLIES) {
        return Err(format!("max_plies {n}: at most {MAX_MAX_PLIES}"));
    }
    if let Some(n) = request
        .plies
        .filter(|&n| n == 0 || n as usize > MAX_MAX_PLIES)
    {
        return Err(format!("plies {n}: 1 to {MAX_MAX_PLIES}"));
    }
    if let Some(n) = request
        .solutions
        .filter(|&n| n == 0 || n > MAX_SOLUTION_LIMIT)
    {
        return Err(format!("solutions {n}: 1 to {MAX_SOLUTION_LIMIT}"));
    }
    let time = match request.time_limit {
        Some(t) if !(t > 0.0 && t.is_finite() && t <= 1e9) => {
            return Err("time_limit must be a positive number of seconds".into())
        }
        t => t.map(Duration::from_secs_f64),
    };
    // As on the command line: the request's length stands over the rules', which stands over
    // the text's; engine.toml's MaxPlies is the default.
    let length = match (request.plies, request.max_plies, rules_length) {
        (Some(n), _, _) | (None, None, Some(n)) => Some(Length::Stated(n)),
        (None, Some(0), _) => None,
        (None, Some(n), _) => Some(Length::AtMost(n)),
        (None, None, None) => problem::named_length(&request.sfen, format)
            .map(Length::Stated)
            .or(defaults.max_plies().map(Length::AtMost)),
    };
    if let Some(e) = Length::error(length, stipulation) {
        return Err(e);
    }
    let solutions = request.solutions.unwrap_or(defaults.solution_limit);
    let limits = crate::search::Limits {
        max_plies: length.map(Length::plies),
        solution_limit: match length {
            Some(Length::Stated(_)) => solutions.max(2),
            _ => solutions,
        },
        ..defaults.limits(stipulation, time)
    };
    let (reply, answer) = tokio::sync::oneshot::channel();
    let job = Job {
        position,
        stipulation,
        length,
        limits,
        reply,
    };
    Ok((job, answer))
}

async fn solve(State(app): State<App>, body: Result<Bytes, BytesRejection>) -> Response {
    let request: SolveRequest = match read_body(body) {
        Ok(r) => r,
        Err(message) => return bad_request(message),
    };
    let (job, answer) = match job_of(request, &app.defaults) {
        Ok(j) => j,
        Err(message) => return bad_request(message),
    };
    match app.engine.submit(job) {
        Ok(()) => {}
        Err(Refused::Busy) => {
            return error(
                StatusCode::CONFLICT,
                "a problem is being solved: wait for its answer, or POST /api/stop",
            )
        }
        Err(Refused::Gone) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the search thread has ended",
            )
        }
    }
    // A client that goes away (a closed tab, a script's timeout) stops its search: nobody
    // would read the answer, and the engine would stay busy for the next one.
    let mut abandoned = StopWhenDropped(Some(app.engine.clone()));
    let answer = answer.await;
    abandoned.0 = None;
    let Ok(report) = answer else {
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the search thread has ended",
        );
    };
    if report.status == Status::Error {
        // A position the stipulation cannot take (no defender king ...): bad input.
        return bad_request(report.error.clone().unwrap_or_else(|| "bad input".into()));
    }
    let plies = report.line_plies();
    let checkers = plies
        .iter()
        .map(|line| line.iter().map(|p| p.checkers.clone()).collect())
        .collect();
    let mut positions = plies
        .into_iter()
        .map(|line| line.into_iter().map(|p| p.sfen).collect::<Vec<_>>());
    let kif = report.record(RecordFormat::Kif);
    let answer = SolveAnswer {
        positions: positions.next().unwrap_or_default(),
        alternative_positions: positions.collect(),
        checkers,
        lines_japanese: report.line_japanese(),
        kif,
        report,
    };
    Json(answer).into_response()
}

/// Stops the engine's search when dropped still holding it (see `solve`).
struct StopWhenDropped(Option<Engine>);

impl Drop for StopWhenDropped {
    fn drop(&mut self) {
        if let Some(engine) = &self.0 {
            engine.stop();
        }
    }
}

/// `POST /api/parse`'s body: any text a problem comes in.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ParseRequest {
    text: String,
}

/// A problem read: its SFEN and what its text names.
#[derive(Serialize)]
struct Parsed {
    /// `null` for a line of rules alone (`協力自玉詰 9手`).
    sfen: Option<String>,
    /// The stipulation the text names (a diagram's or KIF's first line, 作品形式, or the line
    /// itself), as `kyozume solve --rules` reads it; `null` when it names none.
    rules: Option<String>,
    /// The length it states (`手数＝N`, `N手`), if any.
    plies: Option<u32>,
}

async fn parse(body: Result<Bytes, BytesRejection>) -> Response {
    let request: ParseRequest = match read_body(body) {
        Ok(r) => r,
        Err(message) => return bad_request(message),
    };
    match parse_text(&request.text) {
        Ok(parsed) => Json(parsed).into_response(),
        Err(message) => bad_request(message),
    }
}

/// What `POST /api/parse` answers for `text`, or why not.
fn parse_text(text: &str) -> Result<Parsed, String> {
    let text = text.trim();
    let mut named = None;
    let read = problem::parse_problem_and_stipulation(text, Format::Auto, |n| {
        named = n;
        n.unwrap_or(Stipulation::HELPMATE)
    });
    match read {
        Ok((position, _)) => Ok(Parsed {
            sfen: Some(position.to_sfen()),
            rules: named.map(|s| s.japanese()),
            plies: problem::named_length(text, Format::Auto),
        }),
        // A line of rules as Fairy Mate's files and composers print them, with no position:
        // the rules and the length for the board on the page.
        Err(e) => match Stipulation::parse_stated(text) {
            Ok((stipulation, plies)) if !text.contains('\n') => Ok(Parsed {
                sfen: None,
                rules: Some(stipulation.japanese()),
                plies,
            }),
            _ => Err(e.to_string()),
        },
    }
}

/// The request readers on any bytes, as the fuzz target `serve_request` runs them (see
/// `crate::fuzzing`): a solve request made into a job, or a parse request read; each answers
/// or says why not.
#[doc(hidden)]
pub fn read_requests(bytes: &[u8]) {
    let defaults = EngineConfig::default();
    let body = || Ok(Bytes::copy_from_slice(bytes));
    if let Ok(request) = read_body::<SolveRequest>(body()) {
        drop(job_of(request, &defaults));
    }
    if let Ok(request) = read_body::<ParseRequest>(body()) {
        drop(parse_text(&request.text));
    }
}

async fn stop(State(app): State<App>) -> Response {
    #[derive(Serialize)]
    struct Stopping {
        /// A search was running (it now answers with what it has).
        stopping: bool,
    }
    Json(Stopping {
        stopping: app.engine.stop(),
    })
    .into_response()
}

/// Progress as server-sent events (`event: progress`, data a [`ProgressEvent`]): the state now,
/// then each change (several changes between two reads are sent as the last).
async fn progress(
    State(app): State<App>,
) -> Sse<impl futures_util::Stream<Item = Result<Event, Infallible>>> {
    let mut receiver = app.engine.progress();
    receiver.mark_changed();
    let events = futures_util::stream::unfold(receiver, |mut receiver| async move {
        receiver.changed().await.ok()?;
        let now: ProgressEvent = receiver.borrow_and_update().clone();
        let event = Event::default()
            .event("progress")
            .json_data(now)
            .unwrap_or_else(|_| Event::default().comment("unreadable progress"));
        Some((Ok(event), receiver))
    });
    Sse::new(events).keep_alive(KeepAlive::default())
}
