"use strict";
/* The report page: standings, crosstable, LOS, progress and SPRT charts, the list of games, the viewer.
   The same page is the live view (`alternator serve`): then the summary and the games come from the server. */

const PALETTE = ["#2f6fb0", "#d1495b", "#3a9d5d", "#e0a526", "#7b4fb3", "#1b998b", "#c05f2a", "#5d6d7e", "#b5446e", "#6a8d1f"];
const RESULTS = ["1-0", "0-1", "1/2-1/2", "*"];
const PAGE_SIZE = 100;

const state = {
  summary: JSON.parse(document.getElementById("summary").textContent),
  lines: null, // the games' detail lines, split on first use
  filter: { bot: "", result: "", termination: "" },
  page: 0,
  live: new Map(), // live view: game id -> detail of a game in progress
  viewerGame: null,
};

/* The games' details are deflated chunks in base64, one a line; a chunk is inflated when one of its games
   is opened, and kept. */
const chunkCache = new Map();

async function chunkLines(index) {
  if (!chunkCache.has(index)) {
    if (state.lines === null) state.lines = document.getElementById("games").textContent.split("\n");
    const base64 = state.lines[index];
    if (!base64) throw new Error("this game is not in the report");
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
    chunkCache.set(index, (await new Response(stream).text()).split("\n"));
  }
  return chunkCache.get(index);
}

/* A finished game's detail: from the page itself, or from the server in the live view. */
async function gameDetail(n) {
  if (state.summary.live) {
    const response = await fetch(`api/game/${n}`);
    if (!response.ok) throw new Error(`game ${n}: ${response.status} ${await response.text()}`);
    return response.json();
  }
  const size = Number(document.getElementById("games").dataset.chunk);
  const line = (await chunkLines(Math.floor((n - 1) / size)))[(n - 1) % size];
  if (!line) throw new Error(`game ${n} is not in this report`);
  return JSON.parse(line);
}

function pct(x) {
  return x === null || x === undefined ? "–" : `${x.toFixed(1)}%`;
}

function signed(x) {
  return x === null || x === undefined ? "–" : `${x > 0 ? "+" : ""}${x.toFixed(1)}`;
}

function section(id, title, ...body) {
  return el("section", { id }, el("h2", {}, title), ...body);
}

function renderHeader() {
  const s = state.summary;
  const settings = s.settings ? `${s.settings.size}, komi ${fmtNum(s.settings.komi)}, ${s.settings.tc}` : "";
  const t = s.standings.totals;
  return el("header", {},
    el("h1", {}, s.live ? el("span", { class: "livedot", title: "live" }, "● ") : null, `Alternator ${s.kind}: ${s.title}`),
    el("div", { class: "muted" }, `${settings} · ${s.games.length} games (${t.black_wins} Black wins, ${t.white_wins} White wins, ${t.draws} draws, ${t.forfeits} forfeits) · ${s.live ? "updated" : "generated"} ${s.generated}`),
    el("div", { class: "muted small" }, s.outDir),
    ...(s.errors || []).map((e) => el("div", { class: "warn" }, `left out: ${e}`)));
}

function renderStandings() {
  const st = state.summary.standings;
  const kinds = [...new Set(st.rows.flatMap((r) => Object.keys(r.lossKinds)))];
  const hasCpu = st.rows.some((r) => r.cpuS !== null || r.offCpuS !== null);
  const hasLag = st.rows.some((r) => r.lagMs !== null);
  const num = (x) => el("td", {}, x === null || x === undefined ? "–" : fmtNum(x));
  const head = el("tr", {}, ...["#", "bot", "games", "W", "D", "L", "score", "%", "Elo", "±"].map((h) => el("th", {}, h)),
    el("th", { title: "losses by how the game ended" }, "losses by kind"),
    el("th", { title: "mean time per move, as the referee measured it" }, "ms/move"),
    el("th", { title: "95th percentile of the time per move" }, "p95 ms"), el("th", { title: "longest move" }, "max ms"),
    hasCpu ? el("th", { title: "CPU time during its own turns" }, "CPU s") : null,
    hasCpu ? el("th", { title: "CPU time during its opponent's turns (pondering)" }, "CPU s off turn") : null,
    hasLag ? el("th", { title: "the referee's own mean lateness during its moves (not charged)" }, "referee lag ms") : null);
  const rows = st.rows.map((r) => el("tr", { "data-bot": r.name },
    el("td", {}, r.rank), el("td", { class: "name" }, r.name), el("td", {}, r.games), el("td", {}, r.w), el("td", {}, r.d), el("td", {}, r.l),
    el("td", {}, fmtNum(r.points)), el("td", {}, pct(r.pct)), el("td", {}, signed(r.elo)), el("td", {}, r.margin === null ? "–" : r.margin.toFixed(1)),
    el("td", { class: "kinds" }, kinds.filter((k) => r.lossKinds[k]).map((k) => `${k} ${r.lossKinds[k]}`).join(", ") || "–"),
    num(r.msMean), num(r.msP95), num(r.msMax),
    hasCpu ? num(r.cpuS) : null, hasCpu ? num(r.offCpuS) : null, hasLag ? num(r.lagMs) : null));
  return section("standings", "Standings", el("div", { class: "scroll" }, el("table", { class: "standings" }, el("thead", {}, head), el("tbody", {}, ...rows))),
    el("p", { class: "muted small" }, "Elo: Bradley–Terry maximum likelihood over all games, relative to the field mean, ± the 95% margin. Times are as the referee measured them."));
}

function renderMatrix(id, title, cell, note) {
  const order = state.summary.standings.order;
  const head = el("tr", {}, el("th", {}, ""), ...order.map((b) => el("th", {}, b)));
  const rows = order.map((a) => el("tr", {}, el("th", {}, a), ...order.map((b) => (a === b ? el("td", { class: "diag" }, "") : cell(a, b)))));
  return section(id, title, el("div", { class: "scroll" }, el("table", { class: "matrix" }, el("thead", {}, head), el("tbody", {}, ...rows))), el("p", { class: "muted small" }, note));
}

function renderCrosstable() {
  const pairs = state.summary.standings.pairs;
  return renderMatrix("crosstable", "Crosstable", (a, b) => {
    const [w, d, l] = pairs[a][b];
    return el("td", { title: `${a} against ${b}: ${w} wins, ${d} draws, ${l} losses` }, w + d + l ? `${w}-${d}-${l}` : "");
  }, "Row against column: wins-draws-losses.");
}

function renderLos() {
  const los = state.summary.standings.los;
  return renderMatrix("los", "Likelihood of superiority", (a, b) => {
    const p = los[a][b];
    const hue = p === null ? "" : `background: hsla(${p > 0.5 ? 130 : 0}, 55%, 50%, ${Math.abs(p - 0.5) * 0.9})`;
    return el("td", { style: hue }, p === null ? "" : `${Math.round(p * 100)}%`);
  }, "The chance that the row bot is stronger than the column bot, from their decisive games against each other.");
}

/* A line chart as inline SVG: series of y over x, with a legend; `bands` are horizontal lines. */
function lineChart(series, xs, opts) {
  const Wd = 720;
  const Ht = 240;
  const pad = { l: 44, r: 12, t: 10, b: 24 };
  const all = series.flatMap((s) => s.ys.filter((y) => y !== null));
  for (const b of opts.bands || []) all.push(b.y);
  let lo = Math.min(...all, opts.min ?? Infinity);
  let hi = Math.max(...all, opts.max ?? -Infinity);
  if (!(hi > lo)) { lo -= 1; hi += 1; }
  const x0 = xs[0] ?? 0;
  const x1 = xs[xs.length - 1] ?? 1;
  const X = (x) => pad.l + ((x - x0) / Math.max(1e-9, x1 - x0)) * (Wd - pad.l - pad.r);
  const Y = (y) => pad.t + (1 - (y - lo) / (hi - lo)) * (Ht - pad.t - pad.b);
  const svg = svgEl("svg", { viewBox: `0 0 ${Wd} ${Ht}`, class: "chart", role: "img" });
  for (const y of [lo, (lo + hi) / 2, hi]) {
    svg.append(svgEl("line", { x1: pad.l, x2: Wd - pad.r, y1: Y(y), y2: Y(y), class: "grid" }));
    const t = svgEl("text", { x: pad.l - 4, y: Y(y) + 4, "text-anchor": "end" });
    t.textContent = Math.round(y * 10) / 10;
    svg.append(t);
  }
  for (const b of opts.bands || []) {
    svg.append(svgEl("line", { x1: pad.l, x2: Wd - pad.r, y1: Y(b.y), y2: Y(b.y), class: `band ${b.cls || ""}` }));
    const t = svgEl("text", { x: Wd - pad.r - 2, y: Y(b.y) - 3, "text-anchor": "end", class: "bandlabel" });
    t.textContent = b.label;
    svg.append(t);
  }
  const xl = svgEl("text", { x: Wd - pad.r, y: Ht - 6, "text-anchor": "end" });
  xl.textContent = `${opts.xlabel} ${x1}`;
  svg.append(xl);
  series.forEach((s, k) => {
    let d = "";
    let pen = false;
    s.ys.forEach((y, i) => {
      if (y === null) { pen = false; return; }
      d += `${pen ? "L" : "M"}${X(xs[i]).toFixed(1)},${Y(y).toFixed(1)}`;
      pen = true;
    });
    svg.append(svgEl("path", { d, class: "series", stroke: s.color || PALETTE[k % PALETTE.length], "data-series": s.name }));
  });
  const legend = el("div", { class: "legend" }, ...series.map((s, k) => el("span", {}, el("i", { style: `background:${s.color || PALETTE[k % PALETTE.length]}` }), s.name)));
  return el("div", { class: "chartbox" }, svg, legend);
}

function renderProgress() {
  const p = state.summary.progress;
  const bots = state.summary.standings.order;
  if (!state.summary.games.length) return null;
  const score = lineChart(bots.map((b) => ({ name: b, ys: p.score[b] })), p.scoreAt, { xlabel: "games", min: 0, max: 100 });
  const elo = lineChart(bots.map((b) => ({ name: b, ys: p.elo[b] })), p.eloAt, { xlabel: "games", bands: [{ y: 0, label: "field mean" }] });
  return section("progress", "Progress", el("div", { class: "charts" },
    el("figure", {}, el("figcaption", {}, "Score % over the games"), score),
    el("figure", {}, el("figcaption", {}, "Elo over the games"), elo)));
}

function renderSprt() {
  const s = state.summary.sprt;
  if (!s) return null;
  const xs = s.llr.map((_, i) => i + 1);
  const chart = lineChart([{ name: "LLR", ys: s.llr, color: "#2f6fb0" }], xs.length ? xs : [0], {
    xlabel: "pairs",
    bands: [{ y: s.upper, label: `H1 ${s.upper.toFixed(2)}`, cls: "h1" }, { y: s.lower, label: `H0 ${s.lower.toFixed(2)}`, cls: "h0" }, { y: 0, label: "" }],
  });
  const last = s.llr.length ? s.llr[s.llr.length - 1] : 0;
  const verdict = s.verdict ? `${s.verdict} accepted` : "undecided";
  return section("sprt", "SPRT", el("p", {}, `${s.first}: elo0 ${fmtNum(s.elo0)}, elo1 ${fmtNum(s.elo1)}, alpha ${fmtNum(s.alpha)}, beta ${fmtNum(s.beta)} · LLR ${last.toFixed(2)} (${s.lower.toFixed(2)}, ${s.upper.toFixed(2)}) · `, el("b", {}, verdict)), chart);
}

function filteredGames() {
  const s = state.summary;
  const f = state.filter;
  const bot = f.bot === "" ? -1 : s.bots.indexOf(f.bot);
  const term = f.termination === "" ? -1 : s.terminations.indexOf(f.termination);
  const res = f.result === "" ? -1 : RESULTS.indexOf(f.result);
  return s.games.filter((g) => (bot < 0 || g[1] === bot || g[2] === bot) && (res < 0 || g[3] === res) && (term < 0 || g[4] === term));
}

function renderGames() {
  const s = state.summary;
  const select = (key, label, values) => el("label", {}, `${label} `, el("select", { "data-filter": key, onchange: (e) => { state.filter[key] = e.target.value; state.page = 0; refreshGames(); } },
    el("option", { value: "" }, "all"), ...values.map((v) => el("option", { value: v, selected: state.filter[key] === v }, v))));
  const used = new Set(s.games.map((g) => s.terminations[g[4]]));
  const filters = el("div", { class: "filters" }, select("bot", "bot", s.bots), select("result", "result", RESULTS), select("termination", "termination", s.terminations.filter((t) => used.has(t))));
  return section("games", "Games", filters, el("div", { id: "gamelist" }));
}

function refreshGames() {
  const s = state.summary;
  const list = filteredGames();
  const pages = Math.max(1, Math.ceil(list.length / PAGE_SIZE));
  state.page = Math.min(state.page, pages - 1);
  const shown = list.slice(state.page * PAGE_SIZE, (state.page + 1) * PAGE_SIZE);
  const rows = shown.map((g) => {
    const [n, b, w, r, t, moves, bs, ws] = g;
    const term = s.terminations[t];
    return el("tr", { class: "game", "data-game": n, tabindex: 0, onclick: () => openGame(n), onkeydown: (e) => { if (e.key === "Enter") openGame(n); } },
      el("td", {}, n), el("td", { class: r === 0 ? "win" : "" }, s.bots[b]), el("td", { class: r === 1 ? "win" : "" }, s.bots[w]),
      el("td", {}, RESULTS[r]), el("td", {}, el("span", { class: `term t-${term}` }, term)), el("td", {}, moves),
      el("td", {}, bs === null ? "" : `${fmtNum(bs)} – ${fmtNum(ws)}`));
  });
  const pager = el("div", { class: "pager" },
    el("button", { type: "button", disabled: state.page === 0, onclick: () => { state.page -= 1; refreshGames(); } }, "‹ previous"),
    ` ${list.length} games · page ${state.page + 1} of ${pages} `,
    el("button", { type: "button", disabled: state.page >= pages - 1, onclick: () => { state.page += 1; refreshGames(); } }, "next ›"));
  const head = el("tr", {}, ...["#", "Black", "White", "result", "termination", "moves", "score"].map((h) => el("th", {}, h)));
  document.getElementById("gamelist").replaceChildren(pager, el("div", { class: "scroll" }, el("table", { class: "games" }, el("thead", {}, head), el("tbody", {}, ...rows))));
}

const viewerBox = el("div", { id: "viewer", hidden: true });
const viewer = new Viewer(viewerBox, () => {
  state.viewerGame = null;
  if (location.hash) history.replaceState(null, "", location.pathname + location.search);
});

async function openGame(n, ply) {
  try {
    const detail = await gameDetail(n);
    state.viewerGame = n;
    viewer.open(detail, ply);
    history.replaceState(null, "", `#game=${n}`);
  } catch (e) {
    alert(e.message);
  }
}

function openLive(id) {
  const detail = state.live.get(id);
  if (!detail) return;
  state.viewerGame = id;
  viewer.open(detail);
}

// --- the live view -------------------------------------------------------------------------------------

function renderLiveGames() {
  const box = document.getElementById("livegames");
  if (!box) return;
  const cards = [...state.live.values()].map((d) => {
    const game = decodeGame(d);
    const board = boardAt(game, game.plies.length);
    const [b, w] = board.scores();
    const last = game.plies[game.plies.length - 1] || null;
    return el("div", { class: "livecard", "data-live": d.id, onclick: () => openLive(d.id) },
      el("div", { class: "livehead" }, el("b", {}, d.b), " vs ", el("b", {}, d.w)),
      drawBoard(board, last, { small: true }),
      el("div", { class: "muted small" }, `ply ${game.plies.length}${last ? ` · ${last.move}` : ""} · ${b} – ${fmtNum(w + d.k)}`));
  });
  box.replaceChildren(...(cards.length ? cards : [el("p", { class: "muted" }, "No game in progress.")]));
}

function renderAll() {
  const main = document.getElementById("main");
  const s = state.summary;
  const parts = [renderHeader(),
    s.live ? section("live", "Games in progress", el("div", { id: "livegames", class: "livegames" })) : null,
    renderStandings(), renderCrosstable(), renderLos(), renderProgress(), renderSprt(), renderGames()];
  main.replaceChildren(...parts.filter((part) => part !== null));
  refreshGames();
  renderLiveGames();
}

function connectLive() {
  const source = new EventSource("api/events");
  source.addEventListener("summary", (e) => {
    state.summary = JSON.parse(e.data);
    const y = window.scrollY;
    renderAll();
    window.scrollTo(0, y);
  });
  source.addEventListener("game", (e) => {
    const d = JSON.parse(e.data);
    state.live.set(d.id, d);
    renderLiveGames();
  });
  source.addEventListener("move", (e) => {
    const m = JSON.parse(e.data);
    const d = state.live.get(m.id);
    if (!d) return;
    d.m = d.m ? `${d.m} ${m.move}` : m.move;
    d.c += m.color === "black" ? "b" : "w";
    d.t.push(m.t);
    if (d.k2) d.k2.push(m.clock);
    if (m.info) d.i.push([d.t.length - 1, m.info, m.count]);
    renderLiveGames();
    if (state.viewerGame === m.id) viewer.update(d);
  });
  source.addEventListener("done", (e) => {
    const m = JSON.parse(e.data);
    state.live.delete(m.id);
    renderLiveGames();
  });
  source.onerror = () => document.body.classList.add("offline");
  source.onopen = () => document.body.classList.remove("offline");
}

document.body.append(el("main", { id: "main" }), viewerBox);
renderAll();
if (state.summary.live) connectLive();
const wanted = /^#game=(\d+)/.exec(location.hash);
if (wanted) openGame(Number(wanted[1]));
document.body.dataset.ready = String(Math.round(performance.now())); // ms from navigation: the benchmark reads it
