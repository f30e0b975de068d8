// touchmove arbiter dashboard: plain JS, no build step. Live data from /api/stream (server-sent events).
"use strict";

const state = { boards: new Map(), alerts: new Map(), meanings: {}, round: null, bridges: {} };
const $ = (sel, root = document) => root.querySelector(sel);
const tokenInput = $("#token");
let token = localStorage.getItem("touchmove-token") || "";

function text(el, value) { if (el.textContent !== value) el.textContent = value; }

function clock(ms) {
  const s = Math.floor(ms / 1000);
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
  const two = (n) => String(n).padStart(2, "0");
  return "clk " + (h ? h + ":" + two(m) : String(m)) + ":" + two(sec);
}

function playerName(p) {
  const title = p.title ? p.title + " " : "";
  const elo = p.elo ? " (" + p.elo + ")" : "";
  return title + p.name + elo;
}

function tile(board) {
  let el = document.querySelector(`article.board[data-board="${board.board}"]`);
  if (!el) {
    el = $("#board-tpl").content.firstElementChild.cloneNode(true);
    el.dataset.board = board.board;
    for (const form of el.querySelectorAll("form")) {
      form.addEventListener("submit", (ev) => { ev.preventDefault(); boardAction(board.board, form); });
    }
    const boards = $("#boards");
    const after = [...boards.children].find((c) => Number(c.dataset.board) > board.board);
    boards.insertBefore(el, after || null);
  }
  return el;
}

function renderBoard(board, flash) {
  const before = state.boards.get(board.board);
  state.boards.set(board.board, board);
  const el = tile(board);
  text($(".num", el), board.board + ".");
  text($(".p-white", el), playerName(board.white));
  text($(".p-black", el), playerName(board.black));
  if (board.svg) renderSvg({ board: board.board, version: board.version, svg: board.svg });
  text($(".last-move", el), board.last_move || "—");
  text($(".ply", el), "ply " + board.ply);
  text($(".clock", el), board.clock_ms == null ? "" : clock(board.clock_ms));
  const result = $(".result", el);
  text(result, board.result === "*" ? "" : board.result);
  result.dataset.source = board.result_source || "";
  const sync = $(".sync", el);
  const inSync = board.in_sync;
  text(sync, inSync === false ? "out of sync" : inSync === true ? "in sync" : "sync ?");
  sync.className = "sync badge " + (inSync === false ? "bad" : inSync === true ? "ok" : "off");
  const online = $(".online", el);
  text(online, board.online === false ? "offline" : board.online === true ? "online" : "no data");
  online.className = "online badge " + (board.online === false ? "bad" : board.online ? "ok" : "off");
  text($(".board-id", el), board.board_id + (board.needs_resync ? " · resync" : ""));
  const takeback = $("form[data-action=takeback] input", el);
  takeback.max = String(board.ply);
  if (flash && before && before.version !== board.version) {
    el.classList.remove("flash");
    void el.offsetWidth;
    el.classList.add("flash");
    setTimeout(() => el.classList.remove("flash"), 600);
  }
  el.dataset.version = board.version;
  el.dataset.ply = board.ply;
}

function renderSvg(data) {
  // a picture is shown unless a newer one is already there
  const el = tile(state.boards.get(data.board) || { board: data.board });
  if (Number(el.dataset.svgVersion || -1) > data.version) return;
  el.dataset.svgVersion = data.version;
  $(".svg", el).innerHTML = data.svg;
}

function renderAlert(alert) {
  state.alerts.set(alert.id, alert);
  let li = document.querySelector(`li.alert[data-alert-id="${alert.id}"]`);
  if (!li) {
    li = document.createElement("li");
    li.className = "alert";
    li.dataset.alertId = alert.id;
    li.innerHTML = '<div class="head"><span class="code"></span><button class="ack">Acknowledge</button></div>' +
      '<div class="meta"></div><div class="meaning"></div><div class="detail"></div>';
    $(".ack", li).addEventListener("click", () => acknowledge(alert.id));
    $("#alerts").prepend(li);
  }
  text($(".code", li), `Board ${alert.board} · ${alert.code}`);
  const time = alert.ts ? new Date(alert.ts).toLocaleTimeString() : "";
  text($(".meta", li), `art. ${alert.article} · ply ${alert.ply ?? "?"} · ${time}` +
    (alert.acked ? " · acknowledged" : ""));
  text($(".meaning", li), state.meanings[alert.code] || "");
  text($(".detail", li), Object.keys(alert.detail || {}).length ? JSON.stringify(alert.detail) : "");
  li.classList.toggle("acked", alert.acked);
  $(".ack", li).hidden = alert.acked;
  updateAlertMarks();
}

function updateAlertMarks() {
  const open = [...state.alerts.values()].filter((a) => !a.acked);
  text($("#alert-count"), String(open.length));
  $("#alert-count").className = "badge " + (open.length ? "bad" : "ok");
  const alerting = new Set(open.map((a) => a.board));
  for (const el of document.querySelectorAll("article.board")) {
    el.classList.toggle("alerting", alerting.has(Number(el.dataset.board)));
  }
}

function message(msg, isError) {
  const li = document.createElement("li");
  li.textContent = new Date().toLocaleTimeString() + " " + msg;
  if (isError) li.className = "error";
  $("#messages").prepend(li);
  while ($("#messages").children.length > 50) $("#messages").lastChild.remove();
}

function renderBridges(bridges) {
  const parts = Object.entries(bridges).map(([base, s]) => `${base}: ${s}`);
  text($("#bridges"), parts.length ? "bridges " + parts.join(", ") : "");
}

function snapshot(data) {
  state.meanings = data.meanings || {};
  state.round = data.round;
  text($("#event"), data.event);
  text($("#round-info"), `round ${data.round} · ${data.site} · ${data.time_control}`);
  document.title = `${data.event} · round ${data.round} · arbiter`;
  $("#pgn-link").href = `/round/${data.round}.pgn`;
  for (const board of data.boards) renderBoard(board, false);
  $("#alerts").innerHTML = "";
  state.alerts.clear();
  for (const alert of data.alerts) renderAlert(alert);
  state.bridges = data.bridges || {};
  renderBridges(state.bridges);
}

async function api(path, body) {
  const resp = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json", "Authorization": "Bearer " + token },
    body: JSON.stringify(body || {}),
  });
  let data = {};
  try { data = await resp.json(); } catch (e) { /* not JSON */ }
  if (!resp.ok) throw new Error(data.error || resp.statusText);
  return data;
}

async function acknowledge(id) {
  try {
    renderAlert(await api(`/api/alerts/${id}/ack`));
  } catch (e) { message("acknowledge failed: " + e.message, true); }
}

async function boardAction(number, form) {
  const action = form.dataset.action;
  const f = new FormData(form);
  const body = {};
  if (action === "promote") body.piece = f.get("piece");
  if (action === "takeback") body.ply = Number(f.get("ply"));
  if (action === "setup") { body.fen = String(f.get("fen") || "").trim(); body.chess960 = f.get("chess960") === "on"; }
  if (action === "result") body.result = f.get("result");
  try {
    const out = await api(`/api/boards/${number}/${action}`, body);
    message(`board ${number}: ${action} ` + (out.sent ? "sent" : "recorded"));
  } catch (e) { message(`board ${number}: ${action} failed: ${e.message}`, true); }
}

async function unlock(ev) {
  if (ev) ev.preventDefault();
  token = tokenInput.value || token;
  const badge = $("#auth-state");
  try {
    await api("/api/auth");
    localStorage.setItem("touchmove-token", token);
    document.body.classList.add("unlocked");
    text(badge, "arbiter");
    badge.className = "badge ok";
  } catch (e) {
    document.body.classList.remove("unlocked");
    text(badge, token ? "bad token" : "view only");
    badge.className = "badge " + (token ? "bad" : "off");
  }
}

function connect() {
  const conn = $("#conn");
  const source = new EventSource("/api/stream");
  const on = (kind, fn) => source.addEventListener(kind, (ev) => fn(JSON.parse(ev.data)));
  source.onopen = () => { text(conn, "live"); conn.className = "badge ok"; };
  source.onerror = () => { text(conn, "reconnecting…"); conn.className = "badge bad"; };
  on("snapshot", snapshot);
  on("board", (b) => renderBoard(b, true));
  on("svg", renderSvg);
  on("alert", renderAlert);
  on("ack", renderAlert);
  on("bridge", (b) => {
    state.bridges[b.base] = b.state;
    renderBridges(state.bridges);
  });
  on("response", (r) => message(`board ${r.board}: bridge says ${r.status}` +
    (r.command ? ` to ${r.command}` : "") + (r.error ? `: ${r.error}` : ""), r.status !== "ok"));
}

$("#auth").addEventListener("submit", unlock);
const hideAcked = $("#hide-acked");
const applyFilter = () => $("#alerts-panel").classList.toggle("hide-acked", hideAcked.checked);
hideAcked.addEventListener("change", applyFilter);
applyFilter();
if (token) { tokenInput.value = token; unlock(); }
connect();
