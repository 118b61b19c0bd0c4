// kyozume serve's page in a real browser: Debian's chromium driven by playwright-core.
// `tests/e2e/run` (after `cargo build`), as .ci/run does.
// KYOZUME_BIN: the binary (default ../../target/debug/kyozume); KYOZUME_SCREENSHOTS: a
// folder to save the page's screenshots in (docs/images holds the ones the docs show);
// CHROMIUM: the browser (default /usr/bin/chromium).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync, mkdirSync } from "node:fs";
import { chromium } from "playwright-core";

const here = (path) => new URL(path, import.meta.url).pathname;
const BIN = process.env.KYOZUME_BIN ?? here("../../target/debug/kyozume");
const SHOTS = process.env.KYOZUME_SCREENSHOTS;
const KANJI_KIND = { 飛: "R", 角: "B", 金: "G", 銀: "S", 桂: "N", 香: "L", 歩: "P" };

let server, url, browser;

before(async () => {
  server = spawn(BIN, ["serve", "--port", "0", "--hash", "64", "--threads", "1"],
    { stdio: ["ignore", "pipe", "inherit"] });
  url = await new Promise((resolve, reject) => {
    server.on("exit", (code) => reject(new Error(`kyozume serve ended (${code})`)));
    server.stdout.on("data", (d) => {
      const m = /http:\/\/\S+/.exec(String(d));
      if (m) resolve(m[0]);
    });
  });
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    // (No sandbox as root; the rest keeps it off the network.)
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  if (SHOTS) mkdirSync(SHOTS, { recursive: true });
});

after(async () => {
  await browser?.close();
  server?.kill();
});

async function newPage(width = 1100) {
  const page = await browser.newPage({ viewport: { width, height: 900 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.errors = errors;
  await page.goto(url);
  return page;
}

async function shoot(page, name) {
  if (SHOTS) await page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true });
}

/** The board and hands the page shows, as an SFEN's board and hand fields. */
async function shown(page) {
  return page.evaluate((kanjiKind) => {
    const cells = [...document.querySelectorAll("#board .cell")];
    const rows = [];
    for (let r = 0; r < 9; r++) {
      let row = "", empty = 0;
      for (const cell of cells.slice(r * 9, r * 9 + 9)) {
        const p = cell.dataset.piece;
        if (!p) { empty++; continue; }
        if (empty) { row += empty; empty = 0; }
        row += p;
      }
      rows.push(row + (empty || ""));
    }
    let hand = "";
    for (const side of ["b", "w"]) {
      for (const piece of document.querySelectorAll(`#hand-${side} .piece`)) {
        const [, kanji, count] = /^(.)(\d+)$/.exec(piece.querySelector("b").textContent);
        const n = Number(count);
        const kind = kanjiKind[kanji];
        if (n > 0) hand += (n > 1 ? n : "") + (side === "b" ? kind : kind.toLowerCase());
      }
    }
    return `${rows.join("/")} ${hand || "-"}`;
  }, KANJI_KIND);
}

const boardAndHand = (sfen) => { const w = sfen.split(" "); return `${w[0]} ${w[2]}`; };

/** Pastes `text` and reads it with the page's 読込 button, waiting until the page has. */
async function readPasted(page, text) {
  const reads = Number(await page.getAttribute("#paste", "data-reads") ?? 0);
  await page.fill("#paste", text);
  await page.click("#read");
  await page.waitForFunction((n) => Number(document.getElementById("paste").dataset.reads) > n, reads);
}

/** Solves with the page's Solve button: the engine's answer (what the page got). */
async function solve(page) {
  const answered = page.waitForResponse((r) => r.url().endsWith("/api/solve"), { timeout: 120000 });
  await page.click("#solve");
  const response = await answered;
  assert.equal(response.status(), 200, await response.text());
  await page.waitForSelector("#answer:not([hidden])");
  return response.json();
}

/** Steps through every line of `answer` ply by ply with the page's buttons, checking the board
 * against the engine's positions, the checking pieces and, at the end, the mated king. */
async function replayEveryLine(page, answer, { shotAt } = {}) {
  const lines = [answer.positions, ...answer.alternative_positions];
  const moves = [answer.moves, ...answer.alternatives];
  for (let line = 0; line < lines.length; line++) {
    await page.click(`#solutions-list li:nth-child(${line + 1})`);
    assert.equal(await page.textContent("#ply-label"), `0 / ${lines[line].length}`);
    assert.equal(await shown(page), boardAndHand(answer.sfen), "the initial position");
    for (let ply = 1; ply <= lines[line].length; ply++) {
      await page.click("#next");
      assert.equal(await page.textContent("#ply-label"), `${ply} / ${lines[line].length}`);
      assert.equal(await shown(page), boardAndHand(lines[line][ply - 1]), `line ${line} ply ${ply}`);
      const checkers = await page.$$eval("#board .cell.checker", (cells) => cells.map((c) => c.dataset.square));
      assert.deepEqual(checkers.sort(), [...answer.checkers[line][ply - 1]].sort(), `line ${line} ply ${ply}`);
      const to = moves[line][ply - 1].slice(2, 4);
      assert.ok(await page.$(`#board .cell[data-square="${to}"].last, #board .cell[data-square="${to}"].checker`),
        `the move's square ${to} is marked`);
      if (line === 0 && ply === shotAt) await shoot(page, "serve-replay");
    }
    // The side to move is mated: its king is marked.
    const mated = await page.$$eval("#board .cell.mated", (cells) => cells.map((c) => c.dataset.piece));
    const toMove = lines[line].at(-1).split(" ")[1];
    assert.deepEqual(mated, [toMove === "b" ? "K" : "k"]);
    await page.click("#first");
    assert.equal(await shown(page), boardAndHand(answer.sfen));
  }
}

test("a position set up by clicks solves as a ばか詰 and replays on the board", async () => {
  const page = await newPage();
  await shoot(page, "serve-empty");
  await page.click("#clear");
  await page.check("input[name=owner][value=w]");
  await page.click("#palette button[data-tool=K]");
  await page.click('#board .cell[data-square="5a"]');
  await page.check("input[name=owner][value=b]");
  await page.click("#palette button[data-tool=S]");
  await page.click('#board .cell[data-square="4c"]');
  await page.click("#palette button[data-tool=promote]");
  await page.click('#board .cell[data-square="4c"]');
  await page.click('#hand-b .piece[data-kind=G] button[data-delta="1"]');
  await page.click('#hand-b .piece[data-kind=G] button[data-delta="1"]');
  await page.click('#hand-b .piece[data-kind=G] button[data-delta="-1"]');
  await page.click("#rest-to-defender");
  assert.equal(await page.inputValue("#sfen"), "4k4/9/5+S3/9/9/9/9/9/9 b G2r2b3g3s4n4l18p 1");
  const answer = await solve(page);
  assert.equal(answer.status, "mate");
  assert.match(await page.textContent("#summary"), new RegExp(`^${answer.plies}手`));
  await replayEveryLine(page, answer);
  // Back to editing: the position set up is still there.
  await page.click("#back-to-edit");
  assert.equal(await page.inputValue("#sfen"), "4k4/9/5+S3/9/9/9/9/9/9 b G2r2b3g3s4n4l18p 1");
  assert.deepEqual(page.errors, []);
});

test("a 協力自玉詰 pasted as KIF keeps its stated length and replays to the attacker's mate", async () => {
  const page = await newPage();
  await readPasted(page, readFileSync(here("../../examples/hs14.kif"), "utf8"));
  assert.equal(await page.inputValue("#goal"), "協力自玉詰");
  assert.equal(await page.inputValue("#plies"), "14");
  const answer = await solve(page);
  assert.equal(answer.stipulation, "HS#");
  assert.equal(answer.plies, 14);
  assert.equal(answer.verdict, "cooked");
  assert.match(await page.textContent("#summary"), /^余詰/);
  await replayEveryLine(page, answer);
  const saved = page.waitForEvent("download");
  await page.click("#kif");
  const download = await saved;
  assert.equal(download.suggestedFilename(), "kyozume.kif");
  const kif = readFileSync(await download.path(), "utf8");
  assert.equal(kif, answer.kif);
  assert.match(kif, /作品形式：協力自玉詰/);
  assert.deepEqual(page.errors, []);
});

test("an 安南 problem pasted as BOD replays the moves only 安南 allows", async () => {
  const page = await newPage();
  await readPasted(page, readFileSync(here("../../examples/annan.bod"), "utf8"));
  assert.equal(await page.inputValue("#piece-moves"), "安南");
  assert.equal(await page.textContent("#rules-text"), "ルール: 安南ばか詰");
  const answer = await solve(page);
  assert.equal(answer.stipulation, "H# (Annan)");
  assert.equal(answer.plies, 11);
  await replayEveryLine(page, answer, { shotAt: 9 });
  // On a phone-sized screen, mid-line.
  const phone = await newPage(390);
  await readPasted(phone, readFileSync(here("../../examples/annan.bod"), "utf8"));
  await solve(phone);
  for (let i = 0; i < 9; i++) await phone.click("#next");
  const width = await phone.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `the page is ${width} px wide`);
  await shoot(phone, "serve-phone");
  assert.deepEqual([...page.errors, ...phone.errors], []);
});

test("a キルケ capture puts the captured piece back on the board, and the page shows it there", async () => {
  const page = await newPage();
  // rules2.md's H-C2 (tests/data/capture_rules_examples.tsv): 7 plies, captures reborn.
  await page.fill("#sfen", "k8/r8/G8/9/L8/9/9/9/9 b - 1");
  await page.dispatchEvent("#sfen", "change");
  await page.selectOption("#capture-rule", "キルケ");
  const answer = await solve(page);
  assert.equal(answer.stipulation, "H# (Circe)");
  assert.equal(answer.plies, 7);
  await replayEveryLine(page, answer);
  // A capture whose piece is reborn: the board keeps its number of pieces, and a square other
  // than the capture's fills (the piece's home, where the page shows it).
  const count = (sfen) => sfen.split(" ")[0].replace(/[0-9/+]/g, "").length;
  await page.click("#solutions-list li:nth-child(1)");
  let reborn = 0;
  for (let ply = 1; ply <= answer.plies; ply++) {
    const before = await shown(page);
    await page.click("#next");
    const after = await shown(page);
    const move = answer.moves[ply - 1];
    const to = move.slice(2, 4);
    if (move[1] === "*" || !squareHolds(before, to) || count(after) !== count(before)) continue;
    const filled = allSquares().filter((sq) => sq !== to && !squareHolds(before, sq) && squareHolds(after, sq));
    assert.equal(filled.length, 1, `ply ${ply}: ${move}`);
    assert.ok(await page.$(`#board .cell[data-square="${filled[0]}"] span`), `ply ${ply}: shown on ${filled[0]}`);
    reborn++;
  }
  assert.ok(reborn >= 1, "a piece is reborn in the line");
  assert.deepEqual(page.errors, []);
});

function allSquares() {
  const squares = [];
  for (let file = 1; file <= 9; file++) for (const rank of "abcdefghi") squares.push(`${file}${rank}`);
  return squares;
}

/** Whether the board of `shownSfen` (board and hand fields) holds a piece on `square`. */
function squareHolds(shownSfen, square) {
  const rows = shownSfen.split(" ")[0].split("/");
  const row = rows["abcdefghi".indexOf(square[1])];
  let file = 9;
  for (let i = 0; i < row.length; i++) {
    const ch = row[i];
    if (/[0-9]/.test(ch)) { file -= Number(ch); continue; }
    if (ch === "+") continue;
    if (file === Number(square[0])) return true;
    file--;
  }
  return false;
}

test("a long solve shows its progress and Stop ends it", async () => {
  const page = await newPage();
  await page.fill("#sfen", "2K2s3/2Pgk4/9/7P1/6G2/9/9/9/9 b 2Sn 1");
  await page.dispatchEvent("#sfen", "change");
  await page.selectOption("#goal", "協力自玉詰");
  const answered = page.waitForResponse((r) => r.url().endsWith("/api/solve"), { timeout: 60000 });
  await page.click("#solve");
  await page.waitForFunction(() => /深さ \d+手.* [1-9][\d,]* 局面/.test(document.getElementById("progress").textContent),
    null, { timeout: 20000 });
  assert.equal(await page.isDisabled("#solve"), true);
  await shoot(page, "serve-solving");
  await page.click("#stop");
  const response = await answered;
  assert.equal((await response.json()).status, "unsolved");
  await page.waitForSelector("#answer:not([hidden])");
  assert.match(await page.textContent("#summary"), /未解決/);
  assert.equal(await page.isDisabled("#solve"), false);
  assert.deepEqual(page.errors, []);
});
