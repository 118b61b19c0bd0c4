// kyozume's board. It knows shogi's notation, not its rules: every position it replays is the
// one the engine sent (`positions` of POST /api/solve).
"use strict";

const KANJI = { K: "玉", R: "飛", B: "角", G: "金", S: "銀", N: "桂", L: "香", P: "歩",
  "+R": "龍", "+B": "馬", "+S": "全", "+N": "圭", "+L": "杏", "+P": "と" };
const HAND_ORDER = ["R", "B", "G", "S", "N", "L", "P"];
const FULL_SET = { R: 2, B: 2, G: 4, S: 4, N: 4, L: 4, P: 18 };
const PROMOTABLE = new Set(["R", "B", "S", "N", "L", "P"]);
const RANKS = "一二三四五六七八九";
const VERDICT = { sound: "完全", cooked: "余詰", short: "早詰", nomate: "不詰" };

const $ = (id) => document.getElementById(id);

// The position being edited: board[rank 0-8][column 0-8] (column 0 is file 9).
const state = {
  board: emptyBoard(),
  hands: { b: emptyHand(), w: emptyHand() },
  side: "b",
  tool: "P",
  answer: null,   // the last answer of the API
  line: 0,        // which of its lines is replayed
  ply: 0,         // and where
  replaying: false,
  progress: null, // the open EventSource
};

function emptyBoard() { return Array.from({ length: 9 }, () => Array(9).fill(null)); }
function emptyHand() { return Object.fromEntries(HAND_ORDER.map((k) => [k, 0])); }

// ---- SFEN ----

function parseSfen(text) {
  const words = text.trim().replace(/^sfen\s+/, "").split(/\s+/);
  if (words.length < 3) throw new Error("SFEN needs board, side and hand");
  const rows = words[0].split("/");
  if (rows.length !== 9) throw new Error("SFEN board needs 9 ranks");
  const board = emptyBoard();
  rows.forEach((row, r) => {
    let c = 0;
    for (let i = 0; i < row.length; i++) {
      const ch = row[i];
      if (/\d/.test(ch)) { c += Number(ch); continue; }
      let promoted = false;
      let letter = ch;
      if (ch === "+") { promoted = true; letter = row[++i]; }
      if (c > 8 || !letter || !KANJI[letter.toUpperCase()]) throw new Error("bad SFEN board");
      board[r][c++] = { kind: letter.toUpperCase(), promoted, side: letter === letter.toUpperCase() ? "b" : "w" };
    }
  });
  const hands = { b: emptyHand(), w: emptyHand() };
  if (words[2] !== "-") {
    let count = "";
    for (const ch of words[2]) {
      if (/\d/.test(ch)) { count += ch; continue; }
      const kind = ch.toUpperCase();
      if (!(kind in hands.b)) throw new Error("bad SFEN hand");
      hands[ch === kind ? "b" : "w"][kind] += count ? Number(count) : 1;
      count = "";
    }
  }
  return { board, hands, side: words[1] === "w" ? "w" : "b" };
}

function boardSfen(board) {
  return board.map((row) => {
    let out = "", empty = 0;
    for (const p of row) {
      if (!p) { empty++; continue; }
      if (empty) { out += empty; empty = 0; }
      const letter = p.side === "b" ? p.kind : p.kind.toLowerCase();
      out += (p.promoted ? "+" : "") + letter;
    }
    return out + (empty ? empty : "");
  }).join("/");
}

function handSfen(hands) {
  let out = "";
  for (const side of ["b", "w"]) {
    for (const k of HAND_ORDER) {
      const n = hands[side][k];
      if (n > 0) out += (n > 1 ? n : "") + (side === "b" ? k : k.toLowerCase());
    }
  }
  return out || "-";
}

function toSfen(pos) { return `${boardSfen(pos.board)} ${pos.side} ${handSfen(pos.hands)} 1`; }

// ---- drawing ----

function squareName(r, c) { return `${9 - c}${"abcdefghi"[r]}`; }

function cellOf(square) {
  const file = Number(square[0]);
  const rank = "abcdefghi".indexOf(square[1]);
  return document.querySelector(`.cell[data-square="${file}${"abcdefghi"[rank]}"]`);
}

function drawBoard(pos, marks = {}) {
  const board = $("board");
  board.dataset.sfen = toSfen(pos);
  for (let r = 0; r < 9; r++) {
    for (let c = 0; c < 9; c++) {
      const cell = board.children[r * 9 + c];
      const p = pos.board[r][c];
      cell.className = "cell" + (p ? ` ${p.side}` : "") + (p && p.promoted ? " promoted" : "");
      cell.dataset.piece = p ? (p.promoted ? "+" : "") + (p.side === "b" ? p.kind : p.kind.toLowerCase()) : "";
      cell.innerHTML = p ? `<span>${KANJI[(p.promoted ? "+" : "") + p.kind]}</span>` : "";
    }
  }
  if (marks.last) cellOf(marks.last)?.classList.add("last");
  for (const sq of marks.checkers || []) cellOf(sq)?.classList.add("checker");
  if (marks.king) cellOf(marks.king)?.classList.add(marks.mated ? "mated" : "in-check");
  drawHand("b", pos.hands.b);
  drawHand("w", pos.hands.w);
}

function drawHand(side, hand) {
  const box = $(side === "b" ? "hand-b" : "hand-w");
  box.classList.toggle("readonly", state.replaying);
  box.innerHTML = `<span class="who">${side === "b" ? "▲" : "△"}持駒</span>`;
  for (const k of HAND_ORDER) {
    if (state.replaying && !hand[k]) continue;
    const piece = document.createElement("span");
    piece.className = "piece";
    piece.dataset.kind = k;
    piece.innerHTML = `<button data-delta="-1" aria-label="${KANJI[k]}を減らす">−</button>` +
      `<b>${KANJI[k]}${hand[k]}</b><button data-delta="1" aria-label="${KANJI[k]}を増やす">+</button>`;
    box.appendChild(piece);
  }
}

function buildBoard() {
  const board = $("board");
  for (let r = 0; r < 9; r++) {
    for (let c = 0; c < 9; c++) {
      const cell = document.createElement("div");
      cell.className = "cell";
      cell.dataset.square = squareName(r, c);
      cell.setAttribute("role", "gridcell");
      cell.addEventListener("click", () => editCell(r, c));
      board.appendChild(cell);
    }
  }
  document.querySelector(".files").innerHTML = [9, 8, 7, 6, 5, 4, 3, 2, 1].map((f) => `<span>${f}</span>`).join("");
  document.querySelector(".ranks").innerHTML = [...RANKS].map((r) => `<span>${r}</span>`).join("");
}

function buildPalette() {
  const tools = [["K", "玉"], ["R", "飛"], ["B", "角"], ["G", "金"], ["S", "銀"], ["N", "桂"], ["L", "香"], ["P", "歩"],
    ["promote", "成"], ["flip", "反"], ["erase", "消"]];
  $("palette").innerHTML = tools.map(([t, label]) =>
    `<button data-tool="${t}" title="${t}">${label}</button>`).join("");
  $("palette").addEventListener("click", (e) => {
    const tool = e.target.closest("button")?.dataset.tool;
    if (tool) { state.tool = tool; showTool(); }
  });
  showTool();
}

function showTool() {
  for (const b of $("palette").children) b.classList.toggle("chosen", b.dataset.tool === state.tool);
}

// ---- editing ----

function owner() { return document.querySelector("input[name=owner]:checked").value; }

function editCell(r, c) {
  if (state.replaying) return;
  const p = state.board[r][c];
  switch (state.tool) {
    case "erase": state.board[r][c] = null; break;
    case "promote": if (p && PROMOTABLE.has(p.kind)) p.promoted = !p.promoted; break;
    case "flip": if (p) p.side = p.side === "b" ? "w" : "b"; break;
    default: {
      const same = p && p.kind === state.tool && p.side === owner() && !p.promoted;
      state.board[r][c] = same ? null : { kind: state.tool, promoted: false, side: owner() };
    }
  }
  edited();
}

function editHand(side, kind, delta) {
  if (state.replaying) return;
  const n = state.hands[side][kind] + delta;
  state.hands[side][kind] = Math.max(0, Math.min(FULL_SET[kind], n));
  edited();
}

function restToDefender() {
  const used = { ...emptyHand() };
  for (const row of state.board) for (const p of row) if (p && p.kind !== "K") used[p.kind]++;
  for (const k of HAND_ORDER) used[k] += state.hands.b[k];
  for (const k of HAND_ORDER) state.hands.w[k] = Math.max(0, FULL_SET[k] - used[k]);
  edited();
}

function edited() {
  $("sfen").value = toSfen(state);
  drawBoard(state);
}

function loadSfen(text) {
  const pos = parseSfen(text);
  state.board = pos.board; state.hands = pos.hands; state.side = pos.side;
  $("side").value = pos.side;
  edited();
}

// ---- rules ----

function rulesText() {
  const conditions = ["piece-moves", "capture-rule", "paralysis", "captures"].map((id) => $(id).value).join("") +
    ($("pawn-drop-mate").checked ? "打歩詰可" : "");
  return ($("defender-first").checked ? "受先" : "") + conditions + $("goal").value;
}

function showRules() { $("rules-text").textContent = "ルール: " + rulesText(); }

function setRules(named, plies) {
  if (named) {
    $("goal").value = /協力自玉詰|ばか自殺詰|HS/.test(named) ? "協力自玉詰" : "ばか詰";
    $("defender-first").checked = /受先|偶数手/.test(named);
    const pick = (id, names) => { $(id).value = names.find((n) => named.includes(n)) || ""; };
    pick("piece-moves", ["安南", "安北", "対面", "背面"]);
    pick("capture-rule", ["アンチキルケ", "キルケ", "PWC"]);
    pick("paralysis", ["Kマドラシ", "マドラシ"]);
    pick("captures", ["強欲", "禁欲"]);
    $("pawn-drop-mate").checked = named.includes("打歩詰可");
  }
  $("plies").value = plies || "";
  showRules();
}

// ---- solving ----

function numberOrNull(id) { const v = $(id).value.trim(); return v === "" ? null : Number(v); }

async function solve() {
  showError(null);
  $("answer").hidden = true;
  const request = { sfen: toSfen(state), rules: rulesText() };
  const plies = numberOrNull("plies"), maxPlies = numberOrNull("max-plies"), solutions = numberOrNull("solutions");
  if (plies !== null) request.plies = plies;
  if (maxPlies !== null) request.max_plies = maxPlies;
  if (solutions !== null) request.solutions = solutions;
  setSolving(true);
  state.progress = new EventSource("/api/progress");
  state.progress.addEventListener("progress", (e) => showProgress(JSON.parse(e.data)));
  try {
    const response = await fetch("/api/solve", {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(request) });
    const body = await response.json();
    if (!response.ok) showError(body.error);
    else showAnswer(body);
    state.progress.close();
    setSolving(false);
    // Another page's problem is being solved: this one may stop it.
    if (response.status === 409) $("stop").disabled = false;
  } catch (e) {
    showError("サーバーに届きません: " + e.message);
    state.progress.close();
    setSolving(false);
  }
}

function setSolving(on) {
  $("solve").disabled = on;
  $("stop").disabled = !on;
  document.body.classList.toggle("solving", on);
  if (on) $("progress").textContent = "探索中…";
}

function showProgress(p) {
  if (!p.running || p.nodes === 0) return;
  const bound = p.lower_bound === null ? "" : ` 下限 ${p.lower_bound}手`;
  const disk = p.disk_mb > 0 ? `  ディスク ${p.disk_mb.toLocaleString()} MB` : "";
  $("progress").textContent = `深さ ${p.depth}手${bound}  ${p.nodes.toLocaleString()} 局面  ` +
    `${Math.round(p.nps / 1000).toLocaleString()} k局面/秒  ${(p.elapsed_ms / 1000).toFixed(1)} 秒  ` +
    `メモリ ${(p.hashfull / 10).toFixed(1)}%${disk}`;
}

function showError(message) {
  $("error").hidden = !message;
  $("error").textContent = message || "";
}

function showAnswer(a) {
  state.answer = a;
  $("progress").textContent = `${a.nodes.toLocaleString()} 局面  ${(a.time_ms / 1000).toFixed(2)} 秒`;
  $("answer").hidden = false;
  let summary;
  if (a.status === "mate") {
    const count = a.solutions + (a.complete ? "" : "+");
    summary = `${a.plies}手  解 ${count}` + (a.unique === true ? "（唯一）" : a.unique === false ? "（余詰あり）" : "");
  } else if (a.status === "nomate") {
    summary = a.max_plies ? `${a.max_plies}手以内に解なし` : "不詰";
  } else {
    summary = "未解決（中断・時間切れ）";
  }
  if (a.verdict) summary = `${VERDICT[a.verdict]}  ` + summary;
  $("summary").textContent = summary;
  const list = $("solutions-list");
  list.innerHTML = "";
  (a.lines_japanese || []).forEach((line, i) => {
    const li = document.createElement("li");
    li.textContent = line;
    li.addEventListener("click", () => replay(i, 0));
    list.appendChild(li);
  });
  $("kif").hidden = !a.kif;
  if (a.status === "mate") replay(0, 0);
}

// ---- replay ----

function linePositions(i) {
  const a = state.answer;
  return i === 0 ? a.positions : a.alternative_positions[i - 1];
}

function lineMoves(i) {
  const a = state.answer;
  return i === 0 ? a.moves : a.alternatives[i - 1];
}

function replay(line, ply) {
  const a = state.answer;
  const positions = linePositions(line);
  ply = Math.max(0, Math.min(positions.length, ply));
  state.replaying = true;
  state.line = line;
  state.ply = ply;
  $("replay").hidden = false;
  $("edit-tools").disabled = true;
  $("mode-label").textContent = "再生";
  const pos = parseSfen(ply === 0 ? a.sfen : positions[ply - 1]);
  const marks = {};
  if (ply > 0) {
    const mv = lineMoves(line)[ply - 1];
    marks.last = mv.slice(2, 4);
    marks.checkers = a.checkers[line][ply - 1];
    if (marks.checkers.length || ply === positions.length) marks.king = kingSquare(pos, pos.side);
    marks.mated = ply === positions.length;
  }
  drawBoard(pos, marks);
  $("ply-label").textContent = `${ply} / ${positions.length}`;
  for (const [i, li] of [...$("solutions-list").children].entries()) li.classList.toggle("chosen", i === line);
  const words = (a.lines_japanese[line] || "").split(" ");
  $("moves").innerHTML = words.map((w, i) =>
    `<span data-ply="${i + 1}"${i + 1 === ply ? ' class="current"' : ""}>${i + 1} ${w}</span>`).join("");
}

function kingSquare(pos, side) {
  for (let r = 0; r < 9; r++) for (let c = 0; c < 9; c++) {
    const p = pos.board[r][c];
    if (p && p.kind === "K" && p.side === side) return squareName(r, c);
  }
  return null;
}

function step(delta) {
  if (!state.replaying) return;
  const end = linePositions(state.line).length;
  replay(state.line, delta === Infinity ? end : delta === -Infinity ? 0 : state.ply + delta);
}

function backToEdit() {
  state.replaying = false;
  $("replay").hidden = true;
  $("edit-tools").disabled = false;
  $("mode-label").textContent = "編集";
  for (const li of $("solutions-list").children) li.classList.remove("chosen");
  edited();
}

function saveKif() {
  const a = state.answer;
  if (!a || !a.kif) return;
  const blob = new Blob([a.kif], { type: "text/plain;charset=utf-8" });
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = "kyozume.kif";
  link.click();
  URL.revokeObjectURL(link.href);
}

// ---- wiring ----

function wire() {
  buildBoard();
  buildPalette();
  for (const side of ["b", "w"]) {
    $(side === "b" ? "hand-b" : "hand-w").addEventListener("click", (e) => {
      const button = e.target.closest("button");
      const piece = e.target.closest(".piece");
      if (button && piece) editHand(side, piece.dataset.kind, Number(button.dataset.delta));
    });
  }
  $("side").addEventListener("change", () => { state.side = $("side").value; edited(); });
  $("rest-to-defender").addEventListener("click", restToDefender);
  $("clear").addEventListener("click", () => {
    state.board = emptyBoard(); state.hands = { b: emptyHand(), w: emptyHand() }; edited();
  });
  $("sfen").addEventListener("change", () => {
    try { loadSfen($("sfen").value); showError(null); } catch (e) { showError(e.message); }
  });
  $("copy").addEventListener("click", () => navigator.clipboard?.writeText($("sfen").value));
  $("read").addEventListener("click", async () => {
    const response = await fetch("/api/parse", {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ text: $("paste").value }) });
    const body = await response.json();
    if (!response.ok) showError(body.error);
    else {
      showError(null);
      if (state.replaying) backToEdit();
      if (body.sfen) loadSfen(body.sfen);
      setRules(body.rules, body.plies);
    }
    // (Read: a test waits for this.)
    $("paste").dataset.reads = Number($("paste").dataset.reads || 0) + 1;
  });
  for (const el of $("rules").querySelectorAll("select, input")) el.addEventListener("change", showRules);
  $("solve").addEventListener("click", solve);
  $("stop").addEventListener("click", () => fetch("/api/stop", { method: "POST" }));
  $("first").addEventListener("click", () => step(-Infinity));
  $("prev").addEventListener("click", () => step(-1));
  $("next").addEventListener("click", () => step(1));
  $("last").addEventListener("click", () => step(Infinity));
  $("moves").addEventListener("click", (e) => {
    const ply = e.target.closest("span")?.dataset.ply;
    if (ply) replay(state.line, Number(ply));
  });
  $("back-to-edit").addEventListener("click", backToEdit);
  $("kif").addEventListener("click", saveKif);
  document.addEventListener("keydown", (e) => {
    if (e.target.matches("input, textarea, select")) return;
    if (e.key === "ArrowRight") step(1);
    if (e.key === "ArrowLeft") step(-1);
  });
  loadSfen("4k4/9/9/9/9/9/9/9/9 b 2r2b4g4s4n4l18p 1");
  showRules();
}

wire();
