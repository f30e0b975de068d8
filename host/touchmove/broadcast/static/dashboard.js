// touchmove arbiter console: plain JS, no build step. Live data from /api/stream?svg=0 (server-sent events).
//
// Rendering keeps up with a round of 200 boards: updates are queued and applied once per animation frame,
// only rows on screen are written (the others when they scroll in), and everything is updated in place
// (text nodes and class names; the detail board is 64 cells whose glyphs change).
"use strict";

const params = new URLSearchParams(location.search);
const SYNC_GRACE_S = Number(params.get("sync") || 10);   // out of sync for longer than this needs attention
const MEASURE = params.has("measure");                    // the benchmark reads window.touchmoveShown
const SEVERITY = {
  illegal_move: 100, changes_lost: 90, board_identity: 85, touch_move: 80, castling_rook_first: 80,
  castling_obligation: 80, moved_after_release: 80, touch_out_of_turn: 75, result_rejected: 72,
  resync_rejected: 72, board_mismatch: 70, promotion_unverified: 50, draw_claimable: 45, board_restored: 15,
  board_silent: 88, board_rotated: 60, board_answering: 15,   // a vendor board's adapter (docs/boards.md)
  board_reset: 65,                                            // a touchmove board restarted unasked
  board_error: 78,                                            // a touchmove board's firmware reports a fault
};
const GLYPH = { K: "♔", Q: "♕", R: "♖", B: "♗", N: "♘", P: "♙", k: "♚", q: "♛", r: "♜", b: "♝", n: "♞", p: "♟" };

const state = {
  boards: new Map(), alerts: new Map(), meanings: {}, round: null, event: "", bridges: {},
  selected: null, detail: null, timeline: null, audit: [], arbiter: null,
};
const rows = new Map();          // board number -> {el, cells..., shown: the data drawn}
const visible = new Set();       // board numbers whose row is on screen
const pending = new Map();       // board number -> latest data not drawn yet
let frameAsked = false;
let queueDirty = true;
let token = localStorage.getItem("touchmove-token") || "";
window.touchmoveShown = [];

const $ = (sel, root = document) => root.querySelector(sel);
function text(el, value) { if (el.textContent !== value) el.textContent = value; }
function cls(el, name) { if (el.className !== name) el.className = name; }
function el(tag, className, content) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (content != null) e.textContent = content;
  return e;
}

function clock(ms) {
  if (ms == null) return "";
  const s = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
  const two = (n) => String(n).padStart(2, "0");
  return (h ? h + ":" + two(m) : String(m)) + ":" + two(sec);
}
function playerName(p) {
  return (p.title ? p.title + " " : "") + p.name + (p.elo ? " (" + p.elo + ")" : "");
}
function ago(ts) {
  if (!ts) return "";
  const s = Math.max(0, Math.round((Date.now() - Date.parse(ts)) / 1000));
  return s < 60 ? s + " s ago" : s < 3600 ? Math.floor(s / 60) + " min ago" : Math.floor(s / 3600) + " h ago";
}
function timeOf(ts) { return ts ? new Date(ts).toLocaleTimeString([], { hour12: false }) + "." + ts.slice(20, 23) : ""; }
function toMove(b) { return b.fen && b.fen.split(" ")[1] === "b" ? "black" : "white"; }

// -- what a board needs ---------------------------------------------------------------------------------
function kingsFinished(b) { return b.result_source === "kings"; }
function outOfSyncLong(b, now) {
  // once the game is over (the kings in the centre, a mate, a result recorded) the pieces may go anywhere
  if (b.in_sync !== false || kingsFinished(b) || b.result !== "*") return false;
  const since = b.out_of_sync_since ? Date.parse(b.out_of_sync_since) : (b._seenOutOfSync || now);
  return now - since > SYNC_GRACE_S * 1000;
}
function flagEstimate(b, now) {
  // the side to move's clock: its time at its last press, less the time since the opponent moved
  if (b.result !== "*" || !b.clocks || !b.moved_at) return null;
  const side = toMove(b);
  const left = b.clocks[side];
  if (left == null) return null;
  return { side, left: left - (now - Date.parse(b.moved_at)) };
}
function shownClocks(b, now) {
  // both clocks as the players see them: the side to move's runs from the opponent's move
  const c = { ...(b.clocks || {}) };
  const flag = flagEstimate(b, now);
  if (flag) c[flag.side] = Math.max(0, flag.left);
  return c;
}
function needsConfirm(b) { return b.result !== "*" && b.result_source !== "arbiter"; }

function boardStatus(b, now) {
  const open = openAlerts(b.board);
  if (open.length) return ["s-alert", "!" + open.length];
  if (b.online === false) return ["s-offline", "offl"];
  if (outOfSyncLong(b, now)) return ["s-sync", "sync"];
  const shortResult = b.result === "1/2-1/2" ? "½-½" : b.result;
  if (needsConfirm(b)) return ["s-confirm", shortResult];
  if (b.result !== "*") return ["s-over", shortResult];
  return ["", b.online == null ? "" : "live"];
}
const alertsByBoard = new Map();
function openAlerts(n) { return alertsByBoard.get(n) || []; }
function indexAlerts() {
  alertsByBoard.clear();
  for (const a of state.alerts.values()) {
    if (a.acked) continue;
    if (!alertsByBoard.has(a.board)) alertsByBoard.set(a.board, []);
    alertsByBoard.get(a.board).push(a);
  }
}

function queueItems(now) {
  const items = [];
  for (const a of state.alerts.values()) {
    if (a.acked) continue;
    let sev = SEVERITY[a.code] ?? 60;
    const closed = a.window && !a.window.open;
    if (closed) sev -= 30;
    // 7.5.5: a player's second completed illegal move loses the game
    const nth = a.code === "illegal_move" && a.window ? a.window.count || 0 : 0;
    if (nth >= 2) sev += 20;
    items.push({ key: "a" + a.id, sev, board: a.board, alert: a, ts: a.ts,
                 title: `Board ${a.board} · ${a.code}` +
                   (nth >= 2 ? ` · ${a.window.offender}'s ${nth === 2 ? "2nd" : nth + "th"} (7.5.5)` : ""),
                 text: alertLine(a) + ` · ${ago(a.ts)}` + (a.detail && a.detail.reason ? ` · ${a.detail.reason}` : "") +
                       (state.meanings[a.code] ? " · " + state.meanings[a.code] : "") });
  }
  for (const b of state.boards.values()) {
    if (b.online === false) {
      items.push({ key: "o" + b.board, sev: 65, board: b.board, title: `Board ${b.board} · offline`,
                   text: "the board's serial link is down" });
    } else if (outOfSyncLong(b, now)) {
      const since = b.out_of_sync_since || (b._seenOutOfSync && new Date(b._seenOutOfSync).toISOString());
      items.push({ key: "s" + b.board, sev: 55, board: b.board, title: `Board ${b.board} · out of sync`,
                   text: `the pieces do not match the game ${since ? "since " + ago(since) : ""}` });
    }
    const flag = flagEstimate(b, now);
    if (flag && flag.left <= 0) {
      items.push({ key: "f" + b.board, sev: 68, board: b.board, title: `Board ${b.board} · ${flag.side}'s flag`,
                   text: `${flag.side}'s clock has run out (estimated from the last presses)` });
    }
    if (b.held && b.held.before_round) {
      items.push({ key: "h" + b.board, sev: 40, board: b.board,
                   title: `Board ${b.board} · a game from before the round is held`,
                   text: `game ${b.held.game ?? "?"} (${b.held.ply} plies${b.held.result !== "*" ? ", " + b.held.result : ""}) ` +
                         "was on the board when the round opened here (another round's or event's?): it stays out " +
                         "unless you allow it as the round's game; the next game started is the round's" });
    } else if (b.held) {
      items.push({ key: "h" + b.board, sev: 40, board: b.board, title: `Board ${b.board} · a new game is held`,
                   text: `game ${b.held.game ?? "?"} (${b.held.ply} plies) started after the round's game: ` +
                         "allow it as the next game, in place of the round's, or leave it out" });
    }
    if (needsConfirm(b)) {
      items.push({ key: "r" + b.board, sev: 35, board: b.board, confirm: b.result,
                   title: `Board ${b.board} · ${b.result} to confirm`,
                   text: `result from the ${b.result_source === "kings" ? "kings in the centre" : "board"}` });
    }
  }
  items.sort((x, y) => y.sev - x.sev || (x.ts || "").localeCompare(y.ts || "") || x.board - y.board);
  return items;
}

function renderQueue() {
  queueDirty = false;
  const now = Date.now();
  const items = queueItems(now);
  const list = $("#queue");
  const keep = new Map([...list.children].map((li) => [li.dataset.key, li]));
  const shown = items.slice(0, 150);
  let prev = null;
  for (const item of shown) {
    let li = keep.get(item.key);
    if (!li) {
      li = el("li");
      li.dataset.key = item.key;
      li.innerHTML = '<div class="q-head"><span class="q-title"></span><span class="q-buttons"></span></div>' +
        '<div class="q-text"></div><div class="q-window"></div>';
      li.addEventListener("click", (ev) => { if (ev.target.tagName !== "BUTTON") select(Number(li.dataset.board), true); });
      if (item.alert) {
        const ack = el("button", "ack", "Acknowledge");
        ack.addEventListener("click", () => acknowledge(item.alert.id));
        $(".q-buttons", li).append(ack);
      } else if (item.confirm) {
        const ok = el("button", "ack", "Confirm");
        ok.addEventListener("click", () => postAction(Number(li.dataset.board), "result", { result: li.dataset.confirm }));
        $(".q-buttons", li).append(ok);
      }
    } else {
      keep.delete(item.key);
    }
    li.dataset.board = item.board;
    if (item.confirm) li.dataset.confirm = item.confirm;
    cls(li, (item.sev >= 70 ? "sev-high" : item.sev < 40 ? "sev-low" : "sev-mid") +
      (item.board === state.selected ? " selected" : ""));
    text($(".q-title", li), item.title);
    text($(".q-text", li), item.text);
    const w = $(".q-window", li);
    const win = item.alert && item.alert.window;
    text(w, win ? windowText(win) : "");
    cls(w, "q-window" + (win ? (win.open ? " open" : " closed") : ""));
    if (li.previousElementSibling !== prev || li.parentNode !== list) {
      if (prev) prev.after(li); else list.prepend(li);
    }
    prev = li;
  }
  for (const li of keep.values()) li.remove();
  // the badge counts what the list holds (alerts, boards offline or out of sync, results to confirm); red while
  // an alert is unacknowledged, amber for the rest
  text($("#queue-count"), items.length > shown.length ? `(${shown.length} shown)` : "");
  $("#queue-empty").hidden = items.length > 0;
  const openCount = [...state.alerts.values()].filter((a) => !a.acked).length;
  text($("#alert-count"), String(items.length));
  cls($("#alert-count"), "badge " + (openCount ? "bad" : items.length ? "warn" : "ok"));
  $("#alert-count").title = `${items.length} item(s) need an arbiter, ${openCount} of them unacknowledged alerts`;
  const title = (openCount ? `(${openCount}) ` : "") + `${state.event || "touchmove"} · round ${state.round ?? "?"} · arbiter`;
  if (document.title !== title) document.title = title;
  if (isPhone() && state.selected == null && !closedByHand && items.length) select(items[0].board, false);
  return items;
}

function alertLine(a) {   // the bridge's own alerts and refused commands have no article
  return (a.article ? `art. ${a.article} · ` : "") + (a.ply != null ? `ply ${a.ply}` : "no ply");
}
function windowText(w) {
  if (w.open) return `can be acted on (${w.rule}): ${w.text}`;
  return `window closed (${w.rule})` + (w.closed_at ? " at " + timeOf(w.closed_at) : "") +
    (w.closed_by ? ": " + w.closed_by : "");
}

// -- the table of every board -------------------------------------------------------------------------------
const observer = new IntersectionObserver((entries) => {
  for (const e of entries) {
    const n = Number(e.target.dataset.board);
    if (e.isIntersecting) {
      visible.add(n);
      const row = rows.get(n);
      if (row && row.stale) drawRow(n);
    } else visible.delete(n);
  }
}, { rootMargin: "200px" });

function makeRow(n) {
  const r = el("div", "row");
  r.dataset.board = n;
  r.setAttribute("role", "row");
  const cells = {};
  for (const [key, name] of [["n", "n"], ["w", "w"], ["b", "b"], ["cw", "cw"], ["cb", "cb2"], ["lm", "lm"], ["st", "st"]]) {
    cells[key] = el("span", name);
    cells[key].setAttribute("role", "cell");
    r.append(cells[key]);
  }
  r.addEventListener("click", () => select(n, false));
  const row = { el: r, cells, stale: true };
  rows.set(n, row);
  const table = $("#table");
  const after = [...rows.keys()].filter((k) => k > n).sort((a, b) => a - b)[0];
  table.insertBefore(r, after != null ? rows.get(after).el : null);
  observer.observe(r);
  return row;
}

function drawRow(n, now = Date.now()) {
  const b = state.boards.get(n);
  const row = rows.get(n) || makeRow(n);
  if (!b) return;
  if (!visible.has(n) && row.drawn) { row.stale = true; return false; }
  row.stale = false;
  row.drawn = true;
  const c = row.cells;
  text(c.n, String(n));
  text(c.w, b.white.name);
  text(c.b, b.black.name);
  if (c.w.title !== b.white.name) { c.w.title = b.white.name; c.b.title = b.black.name; }   // compact rows cut names
  const side = b.result === "*" ? toMove(b) : "";
  const clocks = shownClocks(b, now);
  text(c.cw, clock(clocks.white));
  text(c.cb, clock(clocks.black));
  cls(c.cw, "cw" + (side === "white" ? " tomove" : "") + (clocks.white != null && clocks.white < 60000 ? " low" : ""));
  cls(c.cb, "cb2" + (side === "black" ? " tomove" : "") + (clocks.black != null && clocks.black < 60000 ? " low" : ""));
  text(c.lm, b.last_move || "");
  const [status, label] = boardStatus(b, now);
  text(c.st, label);
  const filter = filtered(b, status);
  cls(row.el, "row" + (status ? " " + status : "") + (n === state.selected ? " selected" : "") + (filter ? " filtered" : ""));
  const tip = `${playerName(b.white)} – ${playerName(b.black)} · ${b.board_id}` +
    (b.in_sync === false && kingsFinished(b) ? " · kings in the centre" : "");
  if (row.el.title !== tip) row.el.title = tip;
  return true;
}

let findText = "";
function filtered(b, status) {
  if ($("#only-attention").checked && !["s-alert", "s-offline", "s-sync", "s-confirm"].includes(status)) return true;
  if (!findText) return false;
  if (String(b.board) === findText) return false;
  return !(b.white.name.toLowerCase().includes(findText) || b.black.name.toLowerCase().includes(findText));
}
function redrawAll() { const now = Date.now(); for (const n of state.boards.keys()) { rows.get(n).drawn = false; drawRow(n, now); } }

const ROW_WIDTH = 470;   // a row with both names and clocks in full
const ROW_HEIGHT = 15;   // --row in the CSS
function layoutTable() {
  const table = $("#table");
  const n = state.boards.size || 1;
  if (isPhone()) { table.style.removeProperty("--cols"); table.classList.remove("compact"); return; }
  // as many columns as the width allows, and at least as many as keep every board on the screen (with the
  // detail open the table is narrower: its rows go compact, one line each, clocks left to the detail)
  const panel = $("#boards-panel");
  const room = panel.getBoundingClientRect().bottom - table.getBoundingClientRect().top - 8;
  const fit = Math.max(1, Math.floor(room / ROW_HEIGHT));
  const cols = Math.max(1, Math.min(8, Math.max(Math.floor(table.clientWidth / ROW_WIDTH), Math.ceil(n / fit))));
  table.classList.toggle("compact", table.clientWidth / cols < ROW_WIDTH);
  table.style.setProperty("--cols", cols);
  table.style.setProperty("--rows", Math.ceil(n / cols));
}
function isPhone() { return window.matchMedia("(max-width: 800px)").matches; }

// -- one frame: apply what arrived -------------------------------------------------------------------------
function askFrame() {
  if (!frameAsked) { frameAsked = true; requestAnimationFrame(frame); }
}
function frame() {
  frameAsked = false;
  const now = Date.now();
  const shown = [];
  for (const [n, b] of pending) {
    const before = state.boards.get(n);
    if (before && before._seenOutOfSync && b.in_sync === false) b._seenOutOfSync = before._seenOutOfSync;
    else if (b.in_sync === false && !b.out_of_sync_since) b._seenOutOfSync = now;
    const attention = !before || before.online !== b.online || before.in_sync !== b.in_sync ||
      before.result !== b.result || before.result_source !== b.result_source || !before.held !== !b.held;
    state.boards.set(n, b);
    if (attention) queueDirty = true;
    if (drawRow(n, now) && MEASURE) shown.push(n);
    if (n === state.selected) drawDetail();
  }
  pending.clear();
  if (queueDirty) renderQueue();
  if (MEASURE && shown.length) {
    const at = performance.timeOrigin + performance.now();
    for (const n of shown) {
      window.touchmoveShown.push([n, state.boards.get(n).ply, at, arrived.get(n) ?? at]);
      arrived.delete(n);
    }
  }
}

const arrived = new Map();      // board number -> when its oldest undrawn update arrived (with ?measure)
function boardUpdate(b) {
  if (MEASURE && !arrived.has(b.board)) arrived.set(b.board, performance.timeOrigin + performance.now());
  pending.set(b.board, b);
  askFrame();
}

// -- the board detail ----------------------------------------------------------------------------------------
const squares = [];
function buildBoard() {
  const cb = $("#d-board");
  for (let rank = 7; rank >= 0; rank--) {
    for (let file = 0; file < 8; file++) {
      const sq = el("div", "sq " + ((rank + file) % 2 ? "l" : "d"));
      sq.dataset.sq = "abcdefgh"[file] + (rank + 1);
      cb.append(sq);
      squares[rank * 8 + file] = sq;
    }
  }
}
function squareIndex(name) { return (Number(name[1]) - 1) * 8 + "abcdefgh".indexOf(name[0]); }
function drawPosition(fen, marks) {
  const rowsFen = fen.split(" ")[0].split("/");
  for (let r = 0; r < 8; r++) {
    let file = 0;
    for (const ch of rowsFen[r]) {
      if (/\d/.test(ch)) {
        for (let k = 0; k < Number(ch); k++) setSquare((7 - r) * 8 + file++, "", marks);
      } else setSquare((7 - r) * 8 + file++, ch, marks);
    }
  }
}
function setSquare(i, piece, marks) {
  const sq = squares[i];
  text(sq, piece ? GLYPH[piece] : "");
  const base = "sq " + ((Math.floor(i / 8) + (i % 8)) % 2 ? "l" : "d");
  const name = sq.dataset.sq;
  cls(sq, base + (piece ? (piece === piece.toUpperCase() ? " wp" : " bp") : "") +
    (marks.last.includes(name) ? " last" : "") + (marks.touched.includes(name) ? " touched" : ""));
}

let detailFetch = null;
let closedByHand = false;   // on a phone, the top item's board opens by itself until the arbiter closes one
function select(n, fromQueue) {
  if (!state.boards.has(n)) return;
  const changed = state.selected !== n;
  const prevRow = rows.get(state.selected);
  state.selected = n;
  if (prevRow) prevRow.el.classList.remove("selected");
  const row = rows.get(n);
  if (row) {
    row.el.classList.add("selected");
    if (!isPhone()) row.el.scrollIntoView({ block: "nearest" });
  }
  $("#detail").hidden = false;
  $("#console").classList.add("with-detail");
  if (changed) { state.detail = null; state.timeline = null; $("#d-timeline").hidden = true; }
  if (location.hash !== "#board-" + n) history.replaceState(null, "", "#board-" + n);
  drawDetail();
  loadDetail();
  queueDirty = true;
  askFrame();
  layoutTable();
  if (fromQueue && isPhone()) $("#detail").scrollIntoView({ block: "start" });
}
function closeDetail() {
  const row = rows.get(state.selected);
  if (row) row.el.classList.remove("selected");
  state.selected = null;
  $("#detail").hidden = true;
  $("#console").classList.remove("with-detail");
  history.replaceState(null, "", location.pathname + location.search);
  queueDirty = true;
  askFrame();
  layoutTable();
}

async function loadDetail() {
  const n = state.selected;
  if (n == null || detailFetch) return;
  // with a valid token the answer says who acknowledged the board's alerts (arbiter data)
  const init = state.arbiter ? { headers: { "Authorization": "Bearer " + token } } : {};
  detailFetch = fetch(`/api/boards/${n}`, init).then((r) => r.json()).then((d) => {
    for (const a of d.alerts || []) {
      const known = state.alerts.get(a.id);
      if (known && a.acked_by && known.acked_by !== a.acked_by) known.acked_by = a.acked_by;
    }
    if (state.selected === d.board) { state.detail = d; drawDetail(); }
  }).catch(() => {}).finally(() => { detailFetch = null; });
}

function drawDetail() {
  const n = state.selected;
  const b = state.boards.get(n);
  if (!b) return;
  const d = state.detail && state.detail.board === n ? state.detail : null;
  if (d && d.ply !== b.ply || d && d.game !== b.game) { loadDetailSoon(); }
  text($("#d-title"), `Board ${n} · ${b.board_id}` + (b.game != null ? ` · game ${b.game}` : ""));
  text($("#d-white"), "○ " + playerName(b.white));
  text($("#d-black"), "● " + playerName(b.black));
  const side = b.result === "*" ? toMove(b) : "";
  const clocks = shownClocks(b, Date.now());
  text($("#d-clk-white"), clock(clocks.white) || "–");
  text($("#d-clk-black"), clock(clocks.black) || "–");
  cls($("#d-clk-white"), "clk" + (side === "white" ? " tomove" : ""));
  cls($("#d-clk-black"), "clk" + (side === "black" ? " tomove" : ""));
  // with a timeline open: the position before that ply, its first touched piece and the move it made
  const tl = state.timeline && state.timeline.board === n && state.timeline.fen ? state.timeline : null;
  const lastUci = tl ? (tl.move ? tl.move.uci : "") : d && d.moves.length ? d.moves[d.moves.length - 1].uci : "";
  const touched = tl && tl.first_touch ? [tl.first_touch.sq] : [];
  drawPosition(tl ? tl.fen : b.fen, { last: lastUci ? [lastUci.slice(0, 2), lastUci.slice(2, 4)] : [], touched });
  const flags = $("#d-flags");
  const bits = [];
  bits.push([b.online === false ? "offline" : b.online ? "online" : "no data", b.online === false ? "bad" : b.online ? "ok" : "off"]);
  if (kingsFinished(b)) bits.push(["finished: kings in the centre", "ok"]);
  else if (b.result !== "*" && b.in_sync === false) bits.push(["game over: pieces moved", "off"]);
  else bits.push([b.in_sync === false ? "out of sync" : b.in_sync ? "in sync" : "sync ?", b.in_sync === false ? "warn" : b.in_sync ? "ok" : "off"]);
  bits.push([`ply ${b.ply}`, ""]);
  if (b.result !== "*") bits.push([`${b.result} (${b.result_source})`, b.result_source === "arbiter" ? "ok" : "warn"]);
  if (b.needs_resync) bits.push(["resync", "warn"]);
  if (b.held) bits.push([`held: game ${b.held.game ?? "?"}, ${b.held.ply} plies`, "warn"]);
  if (b.allow) bits.push([`allowed: ${b.allow}`, "ok"]);
  const key = JSON.stringify(bits);
  if (flags.dataset.key !== key) {
    flags.dataset.key = key;
    flags.replaceChildren(...bits.map(([t, c]) => el("span", "badge " + c, t)));
  }
  $("#d-confirm").hidden = !needsConfirm(b);
  $("#d-actions input[name=ply]").max = String(b.ply);
  if (d) drawMoves(d);
  drawBoardAlerts(n);
}
let soon = null;
function loadDetailSoon() { if (!soon) soon = setTimeout(() => { soon = null; loadDetail(); }, 250); }

function drawMoves(d) {
  const list = $("#d-moves");
  const key = d.board + ":" + d.game + ":" + d.moves.map((m) => m.uci).join(",") + ":" + d.evidence_plies.join(",") +
    ":" + alertPlies(d.board).join(",") + ":" + (state.timeline ? state.timeline.ply : "");
  if (list.dataset.key === key) return;
  list.dataset.key = key;
  list.textContent = "";
  const alerted = new Set(alertPlies(d.board));
  const white = !d.start_fen || d.start_fen.split(" ")[1] !== "b";
  const startNo = d.start_fen ? Number(d.start_fen.split(" ")[5] || 1) : 1;
  const last = d.moves.length;
  const plies = new Set(d.moves.map((m) => m.ply));
  for (const p of d.evidence_plies) if (p === last + 1) plies.add(p);   // a ply under way (touches, alerts)
  for (const p of [...plies].sort((a, b) => a - b)) {
    const m = d.moves[p - 1];
    const li = el("li");
    li.dataset.ply = p;
    const whiteMove = (p % 2 === 1) === white;
    const no = startNo + Math.floor((p - 1 + (white ? 0 : 1)) / 2);
    li.append(el("span", "mn", whiteMove ? no + "." : no + "…"), document.createTextNode(m ? m.san : "(under way)"));
    if (alerted.has(p)) li.classList.add("has-alert");
    if (state.timeline && state.timeline.ply === p) li.classList.add("current");
    li.addEventListener("click", () => loadTimeline(d.board, p));
    list.append(li);
  }
}
function alertPlies(n) { return [...state.alerts.values()].filter((a) => a.board === n && a.ply != null).map((a) => a.ply); }

function drawBoardAlerts(n) {
  const list = $("#d-alerts");
  const mine = [...state.alerts.values()].filter((a) => a.board === n).sort((a, b) => b.id - a.id);
  const key = mine.map((a) => a.id + (a.acked ? "a" + (a.acked_by || "") : "") +
    (a.window ? (a.window.open ? "o" : "c") : "")).join(",");
  if (list.dataset.key === key) return;
  list.dataset.key = key;
  list.textContent = "";
  for (const a of mine) {
    const li = el("li", a.acked ? "acked" : "");
    li.dataset.alertId = a.id;
    li.append(el("strong", "", `${a.code} · ${alertLine(a)} · ${timeOf(a.ts)}`));
    if (a.detail && a.detail.reason) li.append(el("div", "", a.detail.reason));
    if (state.meanings[a.code]) li.append(el("div", "", state.meanings[a.code]));
    if (a.window) li.append(el("div", "window " + (a.window.open ? "open" : "closed"), windowText(a.window)));
    if (a.acked) li.append(el("div", "muted", "acknowledged" + (a.acked_by ? ` by ${a.acked_by}` : "") +
                                              ` at ${timeOf(a.acked_at)}`));
    else {
      const ack = el("button", "ack", "Acknowledge");
      ack.addEventListener("click", () => acknowledge(a.id));
      li.append(ack);
    }
    if (a.ply != null) {
      const tl = el("button", "", "Timeline");
      tl.addEventListener("click", () => loadTimeline(n, a.ply));
      li.append(" ", tl);
    }
    list.append(li);
  }
}

// -- the touch timeline of one ply ---------------------------------------------------------------------------
async function loadTimeline(n, ply) {
  const d = state.detail;
  const game = d && d.game != null ? `&game=${d.game}` : "";
  try {
    const resp = await fetch(`/api/boards/${n}/timeline?ply=${ply}${game}`);
    const data = await resp.json();
    if (!resp.ok) throw new Error(data.error || resp.statusText);
    state.timeline = data;
    drawTimeline();
    drawDetail();
  } catch (e) { message(`board ${n}: no timeline for ply ${ply}: ${e.message}`, true); }
}
function drawTimeline() {
  const t = state.timeline;
  const box = $("#d-timeline");
  box.hidden = false;
  text($("#tl-title"), `Touch timeline · board ${t.board} · game ${t.game} · ply ${t.ply} (${t.mover} to move)` +
    (t.move ? ` · ${t.move.san}` : ""));
  const parts = [];
  if (t.first_touch) parts.push(`${t.first_touch.text} at ${timeOf(t.first_touch.ts)}.`);
  else parts.push("No piece of the player having the move was reported touched.");
  if (t.obligation) parts.push(`Obligation ${t.obligation}.`);
  parts.push(`From: ${t.sources.join(" and ")}.`);
  text($("#tl-summary"), parts.join(" "));
  const alerts = $("#tl-alerts");
  alerts.textContent = "";
  for (const a of t.alerts) {
    const li = el("li", "", `alert ${a.code} (art. ${a.article}) ${a.meaning ? "— " + a.meaning : ""}`);
    if (a.window) li.append(el("div", "window " + (a.window.open ? "open" : "closed"), windowText(a.window)));
    alerts.append(li);
  }
  const body = $("#tl-rows");
  body.textContent = "";
  for (const e of t.entries) {
    const tr = el("tr", "k-" + e.kind);
    tr.append(el("td", "", timeOf(e.ts) + (e.t != null ? ` (t ${e.t})` : "")), el("td", "", e.text || e.kind));
    let engine = "";
    if (e.kind === "touch") engine = e.binds ? "binds (4.3)" : "does not bind";
    if (e.kind === "alert") engine = `art. ${e.article}` + (e.window ? " · " + (e.window.open ? "claim open" : "window closed") : "");
    tr.append(el("td", "", engine));
    body.append(tr);
  }
  const g = `?game=${t.game}`;
  $("#tl-json").href = `/api/boards/${t.board}/evidence.json${g}`;
  $("#tl-pgn").href = `/api/boards/${t.board}/evidence.pgn${g}`;
}

// -- alerts, audit, arbiters ----------------------------------------------------------------------------------
function alertUpdate(a) {
  // who acknowledged comes only in answers to an arbiter's requests: a public update keeps what is known
  const known = state.alerts.get(a.id);
  if (known && known.acked_by && !("acked_by" in a)) a.acked_by = known.acked_by;
  state.alerts.set(a.id, a);
  indexAlerts();
  queueDirty = true;
  const row = rows.get(a.board);
  if (row) row.drawn = false;
  if (state.boards.has(a.board)) pending.set(a.board, pending.get(a.board) || state.boards.get(a.board));
  askFrame();
}

function auditEntry(e, prepend = true) {
  if (document.querySelector(`#audit li[data-audit-id="${Number(e.id)}"]`)) return;
  const li = el("li", e.ok ? "" : "failed");
  li.dataset.auditId = e.id;
  const what = e.action + (e.board != null ? ` board ${e.board}` : "") +
    (e.detail && e.detail.arbiter ? ` ${e.detail.arbiter}` : "") + (e.detail && e.detail.code ? ` (${e.detail.code})` : "");
  const change = summarizeChange(e.before, e.after);
  li.textContent = `${timeOf(e.ts)} ${e.arbiter}: ${what}${change ? " · " + change : ""}${e.ok ? "" : " · refused: " + e.error}`;
  const list = $("#audit");
  if (prepend) list.prepend(li); else list.append(li);
  while (list.children.length > 300) list.lastChild.remove();
  text($("#audit-count"), `(${list.children.length})`);
}
function summarizeChange(before, after) {
  if (!before || !after || typeof before !== "object") return "";
  const keys = Object.keys(after).filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]) && k !== "fen");
  return keys.map((k) => `${k} ${JSON.stringify(before[k])}→${JSON.stringify(after[k])}`).join(", ");
}
// The audit log is the arbiters' own: read with a token. The public stream only says an entry was added.
let auditSeen = 0;
let auditFetch = null;
async function loadAudit(fresh = true) {
  if (!state.arbiter) {
    $("#audit").textContent = "";
    auditSeen = 0;
    text($("#audit-count"), "(arbiters only)");
    $("#audit-locked").hidden = false;
    return;
  }
  $("#audit-locked").hidden = true;
  if (auditFetch) { await auditFetch; if (fresh) return loadAudit(false); return; }
  auditFetch = (async () => {
    try {
      const data = await api("/api/audit" + (auditSeen ? "?after=" + auditSeen : ""), null, "GET");
      if (!auditSeen) $("#audit").textContent = "";
      for (const e of data.entries) { auditEntry(e); auditSeen = Math.max(auditSeen, Number(e.id) || 0); }
    } catch (e) { /* the token was refused: locked() says so */ }
  })();
  try { await auditFetch; } finally { auditFetch = null; }
}
async function exportAudit(ev) {
  ev.preventDefault();
  try {
    const resp = await fetch("/api/audit.jsonl", { headers: { "Authorization": "Bearer " + token } });
    if (resp.status === 401 && state.arbiter) locked("token refused");
    if (!resp.ok) throw new Error(resp.status === 401 || resp.status === 403 ? "an arbiter's token is needed" : resp.statusText);
    const url = URL.createObjectURL(await resp.blob());
    const a = el("a");
    a.href = url;
    a.download = "arbiter-audit.jsonl";
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (e) { message("audit export failed: " + e.message, true); }
}
async function loadArbiters() {
  const box = $("#arbiters-box");
  if (!state.arbiter) { box.hidden = true; return; }
  try {
    const data = await api("/api/arbiters", null, "GET");
    box.hidden = false;
    const list = $("#arbiters");
    list.textContent = "";
    for (const a of data.arbiters) {
      const li = el("li", a.revoked ? "revoked" : "");
      li.dataset.arbiter = a.name;
      li.append(el("span", "", `${a.name} (${a.role}, ${a.source})` + (a.revoked ? ` revoked by ${a.revoked_by}` : "")));
      if (state.arbiter.role === "chief" && !a.revoked && a.name !== state.arbiter.name) {
        const b = el("button", "revoke", "Revoke");
        b.addEventListener("click", () => revoke(a.name));
        li.append(b);
      }
      list.append(li);
    }
  } catch (e) { box.hidden = true; }
}

function message(msg, isError) {
  const li = el("li", isError ? "error" : "", new Date().toLocaleTimeString([], { hour12: false }) + " " + msg);
  $("#messages").prepend(li);
  while ($("#messages").children.length > 50) $("#messages").lastChild.remove();
}

async function api(path, body, method = "POST") {
  const init = { method, headers: { "Authorization": "Bearer " + token } };
  if (method === "POST") { init.headers["Content-Type"] = "application/json"; init.body = JSON.stringify(body || {}); }
  const resp = await fetch(path, init);
  let data = {};
  try { data = await resp.json(); } catch (e) { /* not JSON */ }
  if (resp.status === 401 && state.arbiter) locked("token refused");
  if (!resp.ok) throw new Error(data.error || resp.statusText);
  return data;
}
async function acknowledge(id) {
  try { alertUpdate(await api(`/api/alerts/${id}/ack`)); } catch (e) { message("acknowledge failed: " + e.message, true); }
}
async function postAction(n, action, body) {
  try {
    const out = await api(`/api/boards/${n}/${action}`, body);
    message(`board ${n}: ${action} ` + (out.sent ? "sent" : "recorded"));
  } catch (e) { message(`board ${n}: ${action} failed: ${e.message}`, true); }
}
async function revoke(name) {
  if (!confirm(`Revoke ${name}'s token? Their next action will be refused.`)) return;
  try { await api(`/api/arbiters/${encodeURIComponent(name)}/revoke`); message(`${name}: token revoked`); loadArbiters(); }
  catch (e) { message(`revoke ${name} failed: ${e.message}`, true); }
}
function boardAction(form) {
  const n = state.selected;
  const action = form.dataset.action;
  const f = new FormData(form);
  const body = {};
  if (action === "promote") body.piece = f.get("piece");
  if (action === "takeback") body.ply = Number(f.get("ply"));
  if (action === "setup") { body.fen = String(f.get("fen") || "").trim(); body.chess960 = f.get("chess960") === "on"; }
  if (action === "result") body.result = f.get("result");
  if (action === "allow") body.allow = f.get("allow");
  postAction(n, action, body);
}

function locked(why) {
  state.arbiter = null;
  document.body.classList.remove("unlocked");
  $("#round-form").hidden = true;
  text($("#auth-state"), why);
  cls($("#auth-state"), "badge bad");
  $("#arbiters-box").hidden = true;
  loadAudit();
}
async function unlock(ev) {
  if (ev) ev.preventDefault();
  token = $("#token").value || token;
  const badge = $("#auth-state");
  try {
    const who = await api("/api/auth");
    localStorage.setItem("touchmove-token", token);
    state.arbiter = { name: who.arbiter, role: who.role };
    document.body.classList.add("unlocked");
    text(badge, who.arbiter + (who.role === "chief" ? " (chief)" : ""));
    cls(badge, "badge ok");
    $("#round-form").hidden = false;
    loadArbiters();
    auditSeen = 0;
    loadAudit();
    loadDetail();
    connect();   // a private console streams once a token is accepted (its cookie goes with the stream)
  } catch (e) {
    state.arbiter = null;
    document.body.classList.remove("unlocked");
    text(badge, token ? "token refused" : "view only");
    cls(badge, "badge " + (token ? "bad" : "off"));
    loadAudit();
  }
}

// -- the stream -------------------------------------------------------------------------------------------------
function snapshot(data) {
  state.meanings = data.meanings || {};
  state.round = data.round;
  state.event = data.event;
  text($("#event"), data.event);
  text($("#round-info"), `round ${data.round} · ${data.site} · ${data.time_control}`);
  $("#pgn-link").href = `/round/${data.round}.pgn`;
  state.alerts.clear();
  for (const a of data.alerts) state.alerts.set(a.id, a);
  indexAlerts();
  const present = new Set(data.boards.map((b) => b.board));
  for (const [n, row] of rows) {   // a new round may have fewer boards
    if (!present.has(n)) { observer.unobserve(row.el); row.el.remove(); rows.delete(n); state.boards.delete(n); }
  }
  if (state.selected != null && !present.has(state.selected)) closeDetail();
  for (const b of data.boards) { state.boards.set(b.board, b); if (!rows.has(b.board)) makeRow(b.board); }
  text($("#board-count"), `${data.boards.length} boards`);
  layoutTable();
  redrawAll();
  queueDirty = true;
  renderQueue();
  state.bridges = data.bridges || {};
  renderBridges();
  const push = $("#push");
  push.hidden = !data.push;
  if (data.push) {
    text(push, "lichess: " + data.push.state);
    cls(push, "badge " + (data.push.state === "ok" ? "ok" : data.push.state === "idle" ? "off" : "bad"));
  }
  const roundSelect = $("#round-select");   // (not "select": that opens a board, used below)
  roundSelect.replaceChildren(...(data.rounds || [data.round]).map((r) => {
    const o = el("option", "", "round " + r);
    o.value = r;
    o.selected = r === data.round;
    return o;
  }));
  loadAudit();   // entries made while the stream was down
  const m = location.hash.match(/^#board-(\d+)$/);
  if (m && state.selected == null) select(Number(m[1]), true);
  else if (state.selected != null) { drawDetail(); loadDetail(); }
}
function renderBridges() {
  const parts = Object.entries(state.bridges).map(([base, s]) => `${base}: ${s}`);
  text($("#bridges"), parts.length ? "bridges " + parts.join(", ") : "");
}

let source = null;
let refusedAt = 0;
function connect() {
  if (source) return;
  const conn = $("#conn");
  source = new EventSource("/api/stream?svg=0");
  const on = (kind, fn) => source.addEventListener(kind, (ev) => fn(JSON.parse(ev.data)));
  source.onopen = () => { text(conn, "live"); conn.className = "badge ok"; };
  source.onerror = () => {
    text(conn, "reconnecting…"); conn.className = "badge bad";
    if (source.readyState !== EventSource.CLOSED) return;   // the browser tries again by itself
    // refused (401): the token was revoked, or the console turned private (a delayed round)
    source.close();
    source = null;
    const refused = () => { if (!source) text(conn, "private while the broadcast is delayed: enter an arbiter token"); };
    if (token && Date.now() - refusedAt > 10000) {   // a new session (unlock connects again), once in a while
      refusedAt = Date.now();
      unlock().then(refused);
      return;
    }
    if (state.arbiter) locked("token refused");
    refused();
  };
  on("snapshot", snapshot);
  on("board", boardUpdate);
  on("alert", alertUpdate);
  on("ack", alertUpdate);
  on("audit", () => loadAudit());
  on("bridge", (b) => { state.bridges[b.base] = b.state; renderBridges(); });
  on("response", (r) => message(`board ${r.board}: bridge says ${r.status}` +
    (r.command ? ` to ${r.command}` : "") + (r.error ? `: ${r.error}` : ""), r.status !== "ok"));
}

buildBoard();
$("#auth").addEventListener("submit", unlock);
$("#audit-export").addEventListener("click", exportAudit);
$("#round-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const number = Number($("#round-select").value);
  if (number === state.round || !confirm(`Broadcast round ${number} from now on?`)) return;
  try {
    await api("/api/round", { round: number });
    message(`round ${number} is now broadcast`);
  } catch (e) { message(`round switch failed: ${e.message}`, true); }
});
$("#d-close").addEventListener("click", () => { closedByHand = true; closeDetail(); });
$("#tl-close").addEventListener("click", () => { state.timeline = null; $("#d-timeline").hidden = true; drawDetail(); });
for (const form of document.querySelectorAll("#d-actions form")) {
  form.addEventListener("submit", (ev) => { ev.preventDefault(); boardAction(form); });
}
$("#d-confirm").addEventListener("click", () => {
  const b = state.boards.get(state.selected);
  if (b) postAction(b.board, "result", { result: b.result });
});
$("#find").addEventListener("input", (ev) => { findText = ev.target.value.trim().toLowerCase(); redrawAll(); });
$("#only-attention").addEventListener("change", redrawAll);
window.addEventListener("resize", layoutTable);
setInterval(() => {   // ages, out-of-sync durations, flags: they change with time alone
  queueDirty = true;
  for (const b of state.boards.values()) {
    const ticking = b.result === "*" && b.moved_at && visible.has(b.board);   // its running clock
    if ((b.in_sync === false || ticking) && !pending.has(b.board)) pending.set(b.board, b);
  }
  askFrame();
}, 1000);
if (token) { $("#token").value = token; unlock(); }
fetch("/status.json").then((r) => r.json()).then((st) => {
  if (!st.console_private) { connect(); return; }
  if (!token) {   // a delayed broadcast: the live console is for arbiters only
    text($("#conn"), "private while the broadcast is delayed: enter an arbiter token");
    $("#conn").className = "badge bad";
  }
}).catch(() => connect());
