// The ladder's pages (referee/ladder/server.py): filled from its JSON API, refreshed every 2 s; the games in
// progress followed move by move from /api/events (boards drawn, and a game opened, with the viewer's viewer.js).
"use strict";
const TOKEN_KEY = "ladder-token"; // an owner's or the organiser's token: fault reasons and stderr logs
const $ = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  for (const child of children) node.append(child instanceof Node ? child : String(child));
  return node;
};
const fmt = (x) => (x === null || x === undefined ? "" : String(Math.round(x)));
const trend = (t) => {
  if (t === null || t === undefined || Math.abs(t) < 0.5) return $("span", {}, "–");
  return $("span", {class: t > 0 ? "up" : "down"}, (t > 0 ? "▲ +" : "▼ ") + Math.round(t));
};
function entryLink(name) { return $("a", {href: "/entry/" + encodeURIComponent(name)}, name); }
function gameLink(id) { return $("a", {href: "/games/" + encodeURIComponent(id)}, id); }
async function getJSON(url) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const headers = token ? {Authorization: "Bearer " + token} : {};
  const response = await fetch(url, {cache: "no-store", headers});
  if (response.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    const problem = document.getElementById("token-problem");
    if (problem) problem.textContent = "that token is not valid";
  }
  if (!response.ok) throw new Error(url + ": " + response.status);
  return response.json();
}
function leaderboardTable(data) {
  const table = $("table", {id: "leaderboard"});
  table.append($("tr", {}, ...["#", "Entry", "Rating", "±", "Games", "W-D-L", "Trend", "Status"].map((h) => $("th", {}, h))));
  for (const e of data.entries) {
    const row = $("tr", {"data-name": e.name, class: "status-" + e.status},
      $("td", {}, e.rank === null ? "" : e.rank), $("td", {}, entryLink(e.name)), $("td", {class: "rating"}, fmt(e.rating)),
      $("td", {class: "uncertainty"}, fmt(e.uncertainty)), $("td", {class: "games"}, e.games),
      $("td", {}, `${e.wins}-${e.draws}-${e.losses}`), $("td", {}, trend(e.trend)),
      $("td", {class: "status"}, e.status));
    if (e.reason) row.title = e.reason;
    table.append(row);
  }
  return table;
}
async function showLeaderboard() {
  const data = await getJSON("/api/leaderboard");
  const content = document.getElementById("content");
  content.replaceChildren(
    $("p", {id: "summary"}, `${data.games} games played${data.paused ? " — paused" : ""}; updated ${data.generated}`),
    leaderboardTable(data));
}
function chart(versions) {
  const ns = "http://www.w3.org/2000/svg";
  const points = versions.flatMap((v) => v.history.map((h) => h[1]));
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("id", "history"); svg.setAttribute("width", "600"); svg.setAttribute("height", "200");
  if (!points.length) return svg;
  const low = Math.min(...points) - 20, high = Math.max(...points) + 20;
  const seqs = versions.flatMap((v) => v.history.map((h) => h[0]));
  const first = Math.min(...seqs), last = Math.max(...seqs, first + 1);
  const x = (s) => 10 + 580 * (s - first) / (last - first), y = (r) => 190 - 180 * (r - low) / (high - low);
  const colours = ["#36c", "#c63", "#393", "#939", "#996"];
  versions.forEach((v, i) => {
    if (!v.history.length) return;
    const line = document.createElementNS(ns, "polyline");
    line.setAttribute("points", v.history.map((h) => `${x(h[0]).toFixed(1)},${y(h[1]).toFixed(1)}`).join(" "));
    line.setAttribute("fill", "none"); line.setAttribute("stroke", colours[i % colours.length]);
    line.setAttribute("data-version", String(v.number));
    svg.append(line);
  });
  return svg;
}
async function showEntry(name) {
  const e = await getJSON("/api/entries/" + encodeURIComponent(name));
  const versions = $("table", {id: "versions"});
  versions.append($("tr", {}, ...["v", "Created", "Retired", "Rating", "±", "Games", "W-D-L", "Source"].map((h) => $("th", {}, h))));
  for (const v of e.versions) versions.append($("tr", {}, $("td", {}, v.number), $("td", {}, v.created), $("td", {}, v.retired || ""),
    $("td", {}, fmt(v.rating)), $("td", {}, fmt(v.uncertainty)), $("td", {}, v.games), $("td", {}, `${v.wins}-${v.draws}-${v.losses}`),
    $("td", {}, v.source)));
  const games = $("table", {id: "games"});
  games.append($("tr", {}, ...["#", "Game", "Black", "White", "Result", "How"].map((h) => $("th", {}, h))));
  for (const g of e.recent) games.append($("tr", {}, $("td", {}, g.seq), $("td", {}, gameLink(g.id)), $("td", {}, g.black),
    $("td", {}, g.white), $("td", {}, g.result), $("td", {}, g.termination)));
  const faults = $("ul", {id: "faults"});
  for (const f of e.faults) faults.append($("li", {class: "reason"}, `${f.at} (version id ${f.version}): ${f.reason}` + (f.stderr ? ` — stderr: ${f.stderr}` : "")));
  const logs = $("div", {id: "logs"});
  for (const log of e.logs) logs.append($("h3", {}, log.file), $("pre", {class: "stderr"}, log.tail));
  const privateParts = e.private
    ? [$("h2", {}, "Faults"), faults, $("h2", {}, "Stderr logs (newest last)"), logs]
    : [$("p", {id: "private-note", class: "muted"}, "Fault reasons and stderr logs are shown to the entry's owner and the organiser: give your token below.")];
  document.getElementById("content").replaceChildren(
    $("p", {id: "status", class: "status-" + e.status}, `${e.status}: rating ${fmt(e.rating)} ± ${fmt(e.uncertainty)} after ${e.games} games` + (e.reason ? ` — ${e.reason}` : "")),
    $("h2", {}, "Rating history"), chart(e.versions), $("h2", {}, "Versions"), versions,
    $("h2", {}, "Recent games"), games, ...privateParts);
}
function tokenForm() {
  const input = $("input", {id: "token", type: "password", placeholder: "upload token or organiser token", autocomplete: "off"});
  const show = $("button", {id: "token-show", type: "button"}, "Show faults and logs");
  const forget = $("button", {id: "token-forget", type: "button"}, "Forget the token");
  show.addEventListener("click", () => {
    if (input.value.trim()) sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    input.value = "";
    document.getElementById("token-problem").textContent = "";
    refresh();
  });
  forget.addEventListener("click", () => { sessionStorage.removeItem(TOKEN_KEY); refresh(); });
  return $("p", {id: "token-form"}, "Owner or organiser: ", input, " ", show, " ", forget, " ", $("span", {id: "token-problem", class: "reason"}));
}

// --- the games in progress, move by move ------------------------------------------------------------------

const live = new Map(); // game id -> its detail (viewer.js's compact form), grown by every move
let watching = null; // the game open in the viewer
const viewerBox = el("div", {id: "viewer", hidden: true});
const viewer = new Viewer(viewerBox, () => { watching = null; });

function ours(d) {
  const name = document.body.dataset.name;
  return document.body.dataset.page !== "entry" || d.b.startsWith(name + ".v") || d.w.startsWith(name + ".v");
}
const MAX_CARDS = 12;
const RENDER_MS = 200; // boards redrawn at most this often: instant bots play a thousand moves a second
let renderPending = null;
function scheduleRender() {
  if (renderPending !== null) return;
  renderPending = setTimeout(() => {
    renderPending = null;
    renderLive();
    if (watching !== null && live.has(watching)) viewer.update(live.get(watching));
  }, RENDER_MS);
}
function renderLive() {
  const box = document.getElementById("livegames");
  const shown = [...live.values()].filter(ours);
  shown.sort((a, b) => Number(a.r !== "*" || Boolean(a.x)) - Number(b.r !== "*" || Boolean(b.x)));
  const cards = shown.slice(0, MAX_CARDS).map((d) => {
    const game = decodeGame(d);
    const board = boardAt(game, game.plies.length);
    const [b, w] = board.scores();
    const last = game.plies[game.plies.length - 1] || null;
    const ended = d.r !== "*" || d.x;
    const card = el("div", {class: "livecard", "data-live": d.id, "data-plies": String(game.plies.length)},
      el("div", {class: "livehead"}, el("b", {}, d.b), " vs ", el("b", {}, d.w)),
      drawBoard(board, last, {small: true}),
      el("div", {class: `muted small${ended ? " ended" : ""}`}, ended ? `${d.r} ${termLabel(d.x)}` : `ply ${game.plies.length}${last ? ` · ${last.move}` : ""} · ${b} – ${fmtNum(w + d.k)}`));
    card.addEventListener("click", () => { watching = d.id; viewer.open(d); });
    return card;
  });
  box.replaceChildren(...(cards.length ? cards : [el("p", {class: "muted"}, "No game in progress.")]));
}
function followLive() {
  const source = new EventSource("/api/events");
  source.addEventListener("game", (e) => { const d = JSON.parse(e.data); live.set(d.id, d); scheduleRender(); });
  source.addEventListener("move", (e) => {
    const m = JSON.parse(e.data);
    const d = live.get(m.id);
    if (!d) return;
    addLiveMove(d, m);
    scheduleRender();
  });
  source.addEventListener("done", (e) => {
    const m = JSON.parse(e.data);
    const d = live.get(m.id);
    if (d && m.r) Object.assign(d, {r: m.r, x: m.x, why: m.why});
    if (watching === m.id) viewer.finish(m.r ? m : {r: "*", x: "aborted", why: "stopped before its end (not scored)"});
    scheduleRender();
    setTimeout(() => { live.delete(m.id); scheduleRender(); }, m.r ? 3000 : 0);
  });
  source.onerror = () => document.body.classList.add("offline");
  source.onopen = () => document.body.classList.remove("offline");
}
async function refresh() {
  const kind = document.body.dataset.page;
  try {
    if (kind === "leaderboard") await showLeaderboard(); else await showEntry(document.body.dataset.name);
  } catch (error) {
    document.getElementById("title").dataset.error = String(error);
  }
}
const content = document.getElementById("content");
if (document.body.dataset.page === "entry") content.after(tokenForm());
content.before($("h2", {}, "Games in progress"), el("div", {id: "livegames", class: "livegames"}));
document.body.append(viewerBox);
renderLive();
followLive();
refresh();
setInterval(refresh, 2000);
