"use strict";
/* The report page: standings, crosstable, LOS, progress and SPRT charts, the list of games, the viewer.
   The same page is the live view (`alternator serve`): then the summary and the games come from the server, the
   list of games a page at a time (api/games, referee/schema/games_page.json), so the page stays small however
   many games the run holds. */

const PALETTE = ["#2f6fb0", "#d1495b", "#3a9d5d", "#e0a526", "#7b4fb3", "#1b998b", "#c05f2a", "#5d6d7e", "#b5446e", "#6a8d1f"];
const RESULTS = ["1-0", "0-1", "1/2-1/2", "*"];
const PAGE_SIZE = 100;

const state = {
  summary: JSON.parse(document.getElementById("summary").textContent),
  lines: null, // the games' detail lines, split on first use
  filter: { bot: "", result: "", termination: "" },
  page: 0,
  live: new Map(), // live view: game id -> detail of a game in progress
  pageTicket: 0, // live view: the last page of games asked for (an older answer arriving late is dropped)
  shownList: null, // live view: the list drawn last, kept on screen while the next page is fetched
  viewerGame: null,
};

/* The games' details are deflated chunks in base64, one a line; a chunk is inflated when one of its games
   is opened, and kept. */
const chunkCache = new Map();

async function chunkLines(index) {
  if (!chunkCache.has(index)) {
    if (state.lines === null) state.lines = document.getElementById("game-data").textContent.split("\n");
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
  const size = Number(document.getElementById("game-data").dataset.chunk);
  const line = (await chunkLines(Math.floor((n - 1) / size)))[(n - 1) % size];
  if (!line) throw new Error(`game ${n} is not in this report`);
  return JSON.parse(line);
}

/* How many games are finished: the live view's summary says, the report's lists them all. */
function gameCount(s) {
  return s.gameCount ?? s.games.length;
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
  const running = s.live && !s.finished;
  const done = gameCount(s);
  const count = s.total ? `${done} of ${s.total} games` : `${done} games`;
  const totals = t.games === undefined ? "" : ` (${t.black_wins} Black wins, ${t.white_wins} White wins, ${t.draws} draws, ${t.forfeits} forfeits)`;
  return el("header", {},
    el("h1", {}, running ? el("span", { class: "livedot", title: "live" }, "● ") : null, `Alternator ${s.kind}: ${s.title}`,
      s.live ? el("span", { class: `runstate ${running ? "running" : "finished"}`, "data-runstate": running ? "running" : "finished" },
        running ? "running" : "finished") : null),
    el("div", { class: "muted" }, `${settings} · ${count}${totals} · ${s.live ? "updated" : "generated"} ${s.generated}`),
    el("div", { class: "muted small" }, s.outDir),
    running && s.host ? el("div", { class: "warn", id: "hoststatus" }, s.host) : null,
    ...(s.errors || []).map((e) => el("div", { class: "warn" }, e)));
}

function renderStandings() {
  const st = state.summary.standings;
  const kinds = [...new Set(st.rows.flatMap((r) => Object.keys(r.lossKinds)))];
  const hasCpu = st.rows.some((r) => r.cpuS !== null || r.offCpuS !== null);
  const hasLag = st.rows.some((r) => r.lagMs !== null);
  const num = (x) => el("td", {}, x === null || x === undefined ? "–" : fmtNum(x));
  const wdl = (x) => el("td", {}, x ? x.join("-") : "–");
  const anchored = !!st.anchor;
  const head = el("tr", {}, ...["#", "bot", "games", "W", "D", "L", "score", "%", "Elo", "±"].map((h) => el("th", {}, h)),
    el("th", { title: "wins-draws-losses as Black, who moves first" }, "as Black"),
    el("th", { title: "wins-draws-losses as White, who moves second" }, "as White"),
    el("th", { title: "losses by how the game ended" }, "losses by kind"),
    el("th", { title: "mean time per move, as the referee measured it" }, "ms/move"),
    el("th", { title: "95th percentile of the time per move" }, "p95 ms"), el("th", { title: "longest move" }, "max ms"),
    hasCpu ? el("th", { title: "CPU time during its own turns" }, "CPU s") : null,
    hasCpu ? el("th", { title: "CPU time during its opponent's turns (pondering)" }, "CPU s off turn") : null,
    hasLag ? el("th", { title: "the referee's own mean lateness during its moves (not charged)" }, "referee lag ms") : null);
  const rows = st.rows.map((r) => el("tr", { "data-bot": r.name },
    el("td", {}, r.rank), el("td", { class: "name" }, r.name), el("td", {}, r.games), el("td", {}, r.w), el("td", {}, r.d), el("td", {}, r.l),
    el("td", {}, fmtNum(r.points)), el("td", {}, pct(r.pct)), el("td", {}, anchored && r.elo !== null ? r.elo.toFixed(1) : signed(r.elo)),
    el("td", {}, r.margin === null ? "–" : r.margin.toFixed(1)), wdl(r.asBlack), wdl(r.asWhite),
    el("td", { class: "kinds" }, kinds.filter((k) => r.lossKinds[k]).map((k) => `${k} ${r.lossKinds[k]}`).join(", ") || "–"),
    num(r.msMean), num(r.msP95), num(r.msMax),
    hasCpu ? num(r.cpuS) : null, hasCpu ? num(r.offCpuS) : null, hasLag ? num(r.lagMs) : null));
  // The terminal's own notes on the fit (referee.standings.elo_notes): its scale, the first move's worth, the draws.
  const notes = (st.eloNotes || []).map((line) => el("p", { class: "muted small elonote" }, line));
  return section("standings", "Standings", el("div", { class: "scroll" }, el("table", { class: "standings" }, el("thead", {}, head), el("tbody", {}, ...rows))),
    ...notes,
    el("p", { class: "muted small" }, state.summary.headToHead
      ? "For two bots the whole-pool Elo here is half the fitted difference; the head-to-head Elo above, from the game pairs, is the one to read. Times are as the referee measured them."
      : "Times are as the referee measured them."));
}

/* Swiss tie-breaks, a knockout bracket or an adaptive run's verdict: standings.json's format_summary. */
function renderFormat() {
  const f = state.summary.format;
  if (!f) return null;
  const parts = [];
  if (f.tiebreaks && f.tiebreaks.length) {
    const head = el("tr", {}, ...["#", "bot", "score", "byes", "Buchholz", "SB", "head-to-head"].map((h) => el("th", {}, h)));
    const rows = f.tiebreaks.map((r) => el("tr", { "data-bot": r.name }, el("td", {}, r.rank), el("td", { class: "name" }, r.name),
      el("td", {}, fmtNum(r.score)), el("td", {}, r.byes), el("td", {}, fmtNum(r.buchholz)), el("td", {}, fmtNum(r.sonneborn_berger)),
      el("td", {}, r.head_to_head === null ? "–" : fmtNum(r.head_to_head))));
    parts.push(el("div", { class: "scroll" }, el("table", { class: "standings tiebreaks" }, el("thead", {}, head), el("tbody", {}, ...rows))));
  }
  if (f.bracket && f.bracket.length) {
    const side = (name, seed) => name === null ? "?" : seed === null ? name : `(${seed}) ${name}`;
    const rounds = [...new Set(f.bracket.map((e) => e.round))];
    parts.push(el("div", { class: "bracket" }, ...rounds.map((round) => el("div", { class: "bracket-round" },
      el("h3", {}, `Round ${round}`),
      ...f.bracket.filter((e) => e.round === round).map((e) => el("div", { class: "encounter", "data-winner": e.winner || "" },
        el("div", { class: e.winner && e.winner === e.top ? "winner" : "" }, side(e.top, e.top_seed), e.games ? ` ${fmtNum(e.top_points)}` : ""),
        el("div", { class: e.winner && e.winner === e.bottom ? "winner" : "" }, e.note === "bye" ? "bye" : side(e.bottom, e.bottom_seed),
          e.games ? ` ${fmtNum(e.bottom_points)}` : ""),
        e.note && e.note !== "bye" ? el("div", { class: "muted small" }, e.note) : null))))));
    if (f.champion) parts.push(el("p", {}, `Champion: ${f.champion}`));
  }
  if (f.order && f.order.length) {
    parts.push(el("p", {}, `Order: ${f.order.join(" > ")}`));
    if (f.undecided.length) parts.push(el("p", { class: "warn" }, `Still undecided: ${f.undecided.join("; ")}`));
  }
  const titles = { swiss: "Swiss", knockout: "Bracket", adaptive: "Ranking" };
  return section("format", titles[f.format] || f.format, ...parts,
    ...[...f.rules, ...f.notes].map((line) => el("p", { class: "muted small" }, line)));
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
  if (!gameCount(state.summary)) return null;
  const score = lineChart(bots.map((b) => ({ name: b, ys: p.score[b] })), p.scoreAt, { xlabel: "games", min: 0, max: 100 });
  const [bandY, bandLabel] = p.eloBand || [0, "field mean"];
  const elo = lineChart(bots.map((b) => ({ name: b, ys: p.elo[b] })), p.eloAt, { xlabel: "games", bands: [{ y: bandY, label: bandLabel }] });
  return section("progress", "Progress", el("div", { class: "charts" },
    el("figure", {}, el("figcaption", {}, "Score % over the games"), score),
    el("figure", {}, el("figcaption", {}, "Elo over the games"), elo)));
}

/* Two-bot runs lead with what testers read (fastchess's lines, OpenBench's test page): the terminal's own
   statistics lines and verdict, the figures one by one, and the LLR after every counted pair. */
function renderHeadToHead() {
  const h = state.summary.headToHead;
  if (!h) return null;
  const pct = (x) => (x === null || x === undefined ? "–" : `${(100 * x).toFixed(2)} %`);
  const pm = (x, m) => (x === null || x === undefined ? "–" : `${signed(x)}${m === null || m === undefined ? "" : ` ± ${m.toFixed(1)}`}`);
  // data-value: the figure as match.json has it (the tests read the page against the file).
  const figure = (name, label, text, value, title) => el("tr", {}, el("th", { title: title || "" }, label),
    el("td", { "data-figure": name, "data-value": JSON.stringify(value) }, text));
  const table = el("table", { class: "figures" }, el("tbody", {},
    figure("score", "Score (W-L-D)", `${h.wins} - ${h.losses} - ${h.draws}  [${h.score === null ? "–" : h.score.toFixed(3)}] ${h.games}`, [h.wins, h.losses, h.draws, h.score, h.games], `${h.first}'s wins - losses - draws, points per game, games`),
    figure("elo", "Elo", pm(h.elo, h.elo_margin), [h.elo, h.elo_margin], `${h.first} against ${h.second}, from the game pairs, 95%`),
    figure("nelo", "nElo", pm(h.nelo, h.nelo_margin), [h.nelo, h.nelo_margin], "normalized Elo, as fishtest and fastchess compute it"),
    figure("los", "LOS", pct(h.los), h.los, "likelihood of superiority (pentanomial)"),
    figure("drawRatio", "DrawRatio", pct(h.draw_ratio), h.draw_ratio),
    figure("ptnml", "Ptnml(0-2)", `[${h.pentanomial.join(", ")}]`, h.pentanomial, "game pairs by the first bot's points: 0, 1/2, 1, 3/2, 2"),
    h.sprt ? figure("llr", "LLR", `${h.sprt.llr.toFixed(2)} (${h.sprt.lower_bound.toFixed(2)}, ${h.sprt.upper_bound.toFixed(2)}) [${fmtNum(h.sprt.elo0)}, ${fmtNum(h.sprt.elo1)}]`, [h.sprt.llr, h.sprt.lower_bound, h.sprt.upper_bound]) : null,
    h.sprt ? figure("verdict", "Verdict", h.sprt.verdict ? `${h.sprt.verdict} accepted` : "none yet", h.sprt.verdict) : null));
  const parts = [el("pre", { class: "lines", "data-lines": "" }, h.lines.join("\n")),
    h.verdict ? el("p", { class: "verdict", "data-verdict": "" }, h.verdict) : null, table];
  if (h.sprt) {
    const xs = h.llrAt.length ? h.llrAt : [0];
    parts.push(lineChart([{ name: "LLR", ys: h.llrCurve.length ? h.llrCurve : [0], color: "#2f6fb0" }], xs, {
      xlabel: "pairs",
      bands: [{ y: h.sprt.upper_bound, label: `H1 ${h.sprt.upper_bound.toFixed(2)}`, cls: "h1" }, { y: h.sprt.lower_bound, label: `H0 ${h.sprt.lower_bound.toFixed(2)}`, cls: "h0" }, { y: 0, label: "" }],
    }));
  }
  return el("section", { id: "head-to-head", class: "h2h" }, el("h2", {}, `${h.first} vs ${h.second}`), ...parts);
}

/* A game of the report's list ([number, black, white, result, termination, moves, scores], the bots and
   terminations by index) as the live view's api/games gives it. */
function entryOf(g) {
  const s = state.summary;
  const [n, b, w, r, t, moves, bs, ws] = g;
  return { n, black: s.bots[b], white: s.bots[w], result: RESULTS[r], termination: s.terminations[t], moves, blackScore: bs, whiteScore: ws };
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
  const used = new Set(s.terminationsUsed ?? s.games.map((g) => s.terminations[g[4]]));
  const filters = el("div", { class: "filters" }, select("bot", "bot", s.bots), select("result", "result", RESULTS.slice(0, 3)), select("termination", "termination", s.terminations.filter((t) => used.has(t))));
  return section("games-list", "Games", filters, el("div", { id: "gamelist" }, ...(s.live && state.shownList ? [state.shownList] : [])));
}

/* The live view's page of games, from the server: only that page is read from the run's database. */
async function fetchPage() {
  const f = state.filter;
  const query = new URLSearchParams({ offset: String(state.page * PAGE_SIZE), limit: String(PAGE_SIZE) });
  for (const key of ["bot", "result", "termination"]) if (f[key] !== "") query.set(key, f[key]);
  const response = await fetch(`api/games?${query}`);
  if (!response.ok) throw new Error(`the list of games: ${response.status} ${await response.text()}`);
  return response.json();
}

function refreshGames() {
  if (state.summary.live) {
    const ticket = ++state.pageTicket;
    fetchPage().then((page) => {
      if (ticket !== state.pageTicket) return; // the user (or a newer summary) asked for another page meanwhile
      const pages = Math.max(1, Math.ceil(page.total / PAGE_SIZE));
      if (state.page > pages - 1) { // fewer games match than the page shown (a new run, other filters)
        state.page = pages - 1;
        refreshGames();
        return;
      }
      drawGames(page.games, page.total);
    }).catch((e) => {
      if (ticket !== state.pageTicket) return;
      document.getElementById("gamelist")?.replaceChildren(el("p", { class: "muted", "data-error": "" }, e.message));
    });
    return;
  }
  const list = filteredGames();
  const pages = Math.max(1, Math.ceil(list.length / PAGE_SIZE));
  state.page = Math.min(state.page, pages - 1);
  drawGames(list.slice(state.page * PAGE_SIZE, (state.page + 1) * PAGE_SIZE).map(entryOf), list.length);
}

/* One page of the list: `shown` the page's games (api/games entries), `total` how many match the filters. */
function drawGames(shown, total) {
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
  const rows = shown.map((g) => {
    const n = g.n;
    return el("tr", { class: "game", "data-game": n, tabindex: 0, onclick: () => openGame(n), onkeydown: (e) => { if (e.key === "Enter") openGame(n); } },
      el("td", {}, n), el("td", { class: g.result === "1-0" ? "win" : "" }, g.black), el("td", { class: g.result === "0-1" ? "win" : "" }, g.white),
      el("td", {}, g.result), el("td", {}, el("span", { class: `term t-${g.termination}` }, termLabel(g.termination))), el("td", {}, g.moves),
      el("td", {}, g.blackScore === null ? "" : `${fmtNum(g.blackScore)} – ${fmtNum(g.whiteScore)}`));
  });
  const pager = el("div", { class: "pager" },
    el("button", { type: "button", disabled: state.page === 0, onclick: () => { state.page -= 1; refreshGames(); } }, "‹ previous"),
    ` ${total} games · page ${state.page + 1} of ${pages} `,
    el("button", { type: "button", disabled: state.page >= pages - 1, onclick: () => { state.page += 1; refreshGames(); } }, "next ›"));
  const head = el("tr", {}, ...["#", "Black", "White", "result", "how it ended", "moves", "score"].map((h) => el("th", {}, h)));
  const list = el("div", { "data-page": state.page + 1, "data-total": total }, pager, el("div", { class: "scroll" }, el("table", { class: "games" }, el("thead", {}, head), el("tbody", {}, ...rows))));
  state.shownList = list;
  document.getElementById("gamelist")?.replaceChildren(list);
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
    const ended = d.r !== "*" || d.x;
    return el("div", { class: "livecard", "data-live": d.id, onclick: () => openLive(d.id) },
      el("div", { class: "livehead" }, d.n === null || d.n === undefined ? "" : `#${d.n} `, el("b", {}, d.b), " vs ", el("b", {}, d.w)),
      drawBoard(board, last, { small: true }),
      el("div", { class: `muted small${ended ? " ended" : ""}` }, ended ? `${d.r} ${termLabel(d.x)}` : `ply ${game.plies.length}${last ? ` · ${last.move}` : ""} · ${b} – ${fmtNum(w + d.k)}`));
  });
  const over = state.summary.finished ? "The run has finished." : "No game in progress.";
  box.replaceChildren(...(cards.length ? cards : [el("p", { class: "muted" }, over)]));
}

/* The followed game ended: its result and reason stay on screen, then the viewer follows the next game in
   progress (or closes on the standings). */
const FOLLOW_NEXT_MS = 4000;

function gameEnded(m) {
  const d = state.live.get(m.id);
  if (d && m.r) Object.assign(d, { r: m.r, x: m.x, why: m.why });
  if (state.viewerGame === m.id) {
    viewer.finish(m.r ? m : { r: "*", x: "aborted", why: "stopped before its end (not scored)" });
    setTimeout(() => {
      if (state.viewerGame !== m.id) return; // the user moved on
      const next = [...state.live.keys()].find((id) => id !== m.id);
      if (next) openLive(next);
      else viewer.close();
    }, FOLLOW_NEXT_MS);
  }
  setTimeout(() => { state.live.delete(m.id); renderLiveGames(); }, m.r ? FOLLOW_NEXT_MS : 0);
  renderLiveGames();
}

function renderAll() {
  const main = document.getElementById("main");
  const s = state.summary;
  const parts = [renderHeader(),
    s.live ? section("live", "Games in progress", el("div", { id: "livegames", class: "livegames" })) : null,
    renderHeadToHead(), renderStandings(), renderFormat(), renderCrosstable(), renderLos(), renderProgress(), renderGames()];
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
    addLiveMove(d, m);
    renderLiveGames();
    if (state.viewerGame === m.id) viewer.update(d);
  });
  source.addEventListener("done", (e) => gameEnded(JSON.parse(e.data)));
  source.addEventListener("host", (e) => {
    state.summary.host = JSON.parse(e.data).status;
    const y = window.scrollY;
    renderAll();
    window.scrollTo(0, y);
  });
  source.addEventListener("finished", (e) => {
    state.summary.finished = JSON.parse(e.data).finished;
    const y = window.scrollY;
    renderAll();
    window.scrollTo(0, y);
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
