"use strict";
/* Alternator in the browser: a port of the rules (protocol/rules.py) for drawing positions, and the game
   viewer. The viewer checks its final scores against the record's, which the rules engine computed. */

const FILES = "abcdefghijklmnopqrstuvwxyz";
const SVG_NS = "http://www.w3.org/2000/svg";

// A live game (a feed's "game" entry) takes a "move" entry of the same game: the report's live view and the
// ladder's pages both follow games in progress with it.
function addLiveMove(d, m) {
  d.m = d.m ? `${d.m} ${m.move}` : m.move;
  d.c += m.color === "black" ? "b" : "w";
  d.t.push(m.t);
  d.at = m.at;
  if (d.k2) d.k2.push(m.clock);
  if (m.info) d.i.push([d.t.length - 1, m.info, m.count]);
}

function cellName(i, W) {
  return FILES[i % W] + (Math.floor(i / W) + 1);
}

function isDark(i, W) {
  // RULES.md: a1 is dark; (file + rank) even is a black (dark) cell.
  return ((i % W) + Math.floor(i / W)) % 2 === 0;
}

class Board {
  constructor(W, H, komi) {
    this.W = W;
    this.H = H;
    this.komi = komi;
    this.parent = new Int16Array(W * H).fill(-1); // -1: no dot (a root)
    this.size = new Int32Array(W * H).fill(1); // tree size, kept at roots
    this.passes = 0;
  }

  parseCell(text) {
    const m = /^([a-z])([1-9][0-9]?)$/.exec(text);
    const f = m ? FILES.indexOf(m[1]) : -1;
    const r = m ? Number(m[2]) - 1 : -1;
    if (f < 0 || f >= this.W || r < 0 || r >= this.H) throw new Error(`${text}: not a cell of a ${this.W}x${this.H} board`);
    return r * this.W + f;
  }

  root(i) {
    while (this.parent[i] >= 0) i = this.parent[i];
    return i;
  }

  /* Play one move in RULES.md notation; returns {p, q, moved} (p = -1 for a pass); throws on an illegal move. */
  play(text) {
    if (text === "pass") {
      this.passes += 1;
      return { p: -1, q: -1, moved: 0 };
    }
    const m = /^([a-z][0-9]+)([a-z][0-9]+)$/.exec(text);
    if (!m) throw new Error(`${text}: not a move`);
    const p = this.parseCell(m[1]);
    const q = this.parseCell(m[2]);
    const W = this.W;
    const adjacent = (Math.abs(p - q) === W) || (Math.abs(p - q) === 1 && Math.floor(p / W) === Math.floor(q / W));
    if (this.parent[p] >= 0 || this.parent[q] >= 0 || !adjacent || this.size[p] < this.size[q]) {
      throw new Error(`${text}: illegal in this position`);
    }
    const moved = this.size[p];
    this.parent[p] = q;
    this.size[q] += moved;
    this.passes = 0;
    return { p, q, moved };
  }

  /* [black, white] tree totals, komi not included. */
  scores() {
    let black = 0;
    let white = 0;
    for (let i = 0; i < this.parent.length; i++) {
      if (this.parent[i] < 0) {
        if (isDark(i, this.W)) black += this.size[i];
        else white += this.size[i];
      }
    }
    return [black, white];
  }
}

function fmtMs(ms) {
  if (ms === null || ms === undefined) return "–";
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${ms.toFixed(ms < 10 ? 1 : 0)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 2 : 1)} s`;
  return `${Math.floor(s / 60)}:${String(Math.floor(s % 60)).padStart(2, "0")}`;
}

function fmtNum(x) {
  return Number.isInteger(x) ? String(x) : String(Math.round(x * 100) / 100);
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}

function svgEl(tag, attrs) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  return node;
}

/* Draw `board` as an SVG: cells dark and light, every pit a dot with its stem towards its parent,
   every root of a tree larger than one cell a badge with the tree's size in its owner's colour.
   Every cell carries data-* attributes (kind, parent, size, owner) that tests compare with the engine. */
function drawBoard(board, lastMove, opts) {
  const S = 48;
  const L = opts && opts.small ? 0 : 18;
  const W = board.W;
  const H = board.H;
  const svg = svgEl("svg", { viewBox: `0 0 ${L + W * S} ${H * S + L}`, class: "board", role: "img" });
  const x = (i) => L + (i % W) * S;
  const y = (i) => (H - 1 - Math.floor(i / W)) * S;
  const cells = svgEl("g", { class: "cells" });
  const stems = svgEl("g", { class: "stems" });
  const pits = svgEl("g", { class: "pits" });
  const roots = svgEl("g", { class: "roots" });
  for (let i = 0; i < W * H; i++) {
    const dark = isDark(i, W);
    const parent = board.parent[i];
    const rect = svgEl("rect", {
      x: x(i), y: y(i), width: S, height: S, class: `cell ${dark ? "dark" : "light"}`,
      "data-cell": cellName(i, W), "data-kind": parent >= 0 ? "pit" : "root",
    });
    if (parent >= 0) {
      rect.setAttribute("data-parent", cellName(parent, W));
    } else {
      rect.setAttribute("data-size", board.size[i]);
      rect.setAttribute("data-owner", dark ? "black" : "white");
    }
    cells.append(rect);
    const cx = x(i) + S / 2;
    const cy = y(i) + S / 2;
    if (parent >= 0) {
      const px = x(parent) + S / 2;
      const py = y(parent) + S / 2;
      stems.append(svgEl("line", { x1: cx, y1: cy, x2: px, y2: py, class: "stem", "data-from": cellName(i, W), "data-to": cellName(parent, W) }));
      // An arrowhead on the cell edge, pointing from the pit to its parent: the stem's direction at a glance.
      const dx = Math.sign(px - cx);
      const dy = Math.sign(py - cy);
      const mx = (cx + px) / 2;
      const my = (cy + py) / 2;
      const a = S * 0.13;
      const tip = `${mx + dx * a},${my + dy * a}`;
      const left = `${mx - dx * a * 0.6 - dy * a},${my - dy * a * 0.6 + dx * a}`;
      const right = `${mx - dx * a * 0.6 + dy * a},${my - dy * a * 0.6 - dx * a}`;
      stems.append(svgEl("polygon", { points: `${tip} ${left} ${right}`, class: "arrow" }));
      pits.append(svgEl("circle", { cx, cy, r: S * 0.13, class: "pit", "data-cell": cellName(i, W) }));
    } else if (board.size[i] > 1) {
      const g = svgEl("g", { class: `root ${dark ? "black" : "white"}`, "data-cell": cellName(i, W), "data-size": board.size[i], "data-owner": dark ? "black" : "white" });
      g.append(svgEl("circle", { cx, cy, r: S * 0.3 }));
      const t = svgEl("text", { x: cx, y: cy + 1, "text-anchor": "middle", "dominant-baseline": "central" });
      t.textContent = board.size[i];
      g.append(t);
      roots.append(g);
    }
  }
  svg.append(cells, stems, pits, roots);
  if (lastMove && lastMove.p >= 0) {
    for (const i of [lastMove.p, lastMove.q]) {
      svg.append(svgEl("rect", { x: x(i) + 2, y: y(i) + 2, width: S - 4, height: S - 4, class: "last" }));
    }
  }
  if (L) {
    const labels = svgEl("g", { class: "labels" });
    for (let f = 0; f < W; f++) {
      const t = svgEl("text", { x: L + f * S + S / 2, y: H * S + L - 4, "text-anchor": "middle" });
      t.textContent = FILES[f];
      labels.append(t);
    }
    for (let r = 0; r < H; r++) {
      const t = svgEl("text", { x: L / 2, y: (H - 1 - r) * S + S / 2 + 4, "text-anchor": "middle" });
      t.textContent = r + 1;
      labels.append(t);
    }
    svg.append(labels);
  }
  return svg;
}

/* A game's plies from its compact detail: every move with who made it, its time, clocks and info. */
function decodeGame(detail) {
  const opening = detail.o ? detail.o.split(" ") : [];
  const moves = detail.m ? detail.m.split(" ") : [];
  const plies = [];
  const infos = new Map((detail.i || []).map(([ply, info, count]) => [ply, { info, count }]));
  const board = new Board(detail.W, detail.H, detail.k);
  const margins = [marginOf(board)];
  let color = "black";
  let clocks = { black: detail.base, white: detail.base };
  let error = null;
  const all = opening.map((m) => [m, null]).concat(moves.map((m, j) => [m, j]));
  for (const [text, j] of all) {
    let played;
    const mover = j === null ? color : detail.c[j] === "b" ? "black" : "white";
    try {
      played = board.play(text);
    } catch (e) {
      error = `ply ${plies.length + 1}: ${e.message}`;
      break;
    }
    if (j !== null && detail.k2) clocks = { ...clocks, [mover]: detail.k2[j] };
    plies.push({
      move: text, color: mover, opening: j === null, p: played.p, q: played.q,
      ms: j === null ? null : detail.t[j] / 10, clocks,
      cpu: j === null || !detail.u || detail.u[j] === null ? null : detail.u[j] / 10,
      lag: j === null || !detail.lt || detail.lt[j] === null ? null : detail.lt[j] / 1000, info: j === null ? null : infos.get(j) || null,
    });
    margins.push(marginOf(board));
    color = mover === "black" ? "white" : "black";
  }
  return { detail, plies, margins, error, openingLength: opening.length };
}

function marginOf(board) {
  const [b, w] = board.scores();
  return b - w - board.komi;
}

function boardAt(game, n) {
  const d = game.detail;
  const board = new Board(d.W, d.H, d.k);
  for (let i = 0; i < n; i++) board.play(game.plies[i].move);
  return board;
}

const RESULT_TEXT = { "1-0": "Black wins", "0-1": "White wins", "1/2-1/2": "Draw", "*": "No result" };
/* How a game ended, in words (the terminal's): "normal" is a game scored on the board. */
const TERM_WORDS = {
  normal: "on the board", time: "lost on time", illegal_move: "illegal move", protocol: "protocol error",
  crash: "crashed", unresponsive: "stopped answering", void: "void (not scored)", aborted: "aborted (not scored)",
};
const AUTOPLAY_MS = 600;

function termLabel(x) {
  return TERM_WORDS[x] || x || "";
}

/* A value a bot sent in an info, for people: numbers rounded (no 7.955999999999997). */
function fmtValue(value) {
  if (typeof value === "number") return fmtNum(value);
  if (typeof value === "string") return value;
  return JSON.stringify(value, (k, v) => (typeof v === "number" && !Number.isInteger(v) ? Math.round(v * 100) / 100 : v));
}

/* The viewer: a board, both sides' names, clocks and scores, the move's time and info, a scrub bar. */
class Viewer {
  constructor(container, onClose) {
    this.container = container;
    this.onClose = onClose;
    this.game = null;
    this.ply = 0;
    this.follow = false;
    this.autoplay = null; // the timer while the viewer plays the moves by itself
    this.ticker = null; // the timer counting the mover's clock down in a live game
    this.keyHandler = (e) => this.onKey(e);
  }

  open(detail, ply) {
    this.stopAutoplay();
    this.game = decodeGame(detail);
    this.follow = ply === undefined && detail.r === "*" && !detail.x;
    this.build();
    this.show(ply === undefined ? this.game.plies.length : ply);
    document.addEventListener("keydown", this.keyHandler);
    this.startTicker();
  }

  /* A live game got more moves (or its result): keep the ply unless it was at the end. */
  update(detail) {
    const atEnd = this.ply === this.game.plies.length;
    const playing = this.autoplay !== null;
    this.game = decodeGame(detail);
    this.build();
    this.show(atEnd ? this.game.plies.length : this.ply);
    if (playing) this.startAutoplay();
  }

  /* A live game ended: show its result and reason (`ending`: {r, x, why, bs, ws} from the feed). */
  finish(ending) {
    if (!this.game) return;
    const d = this.game.detail;
    Object.assign(d, { r: ending.r || "*", x: ending.x || "aborted", why: ending.why || "the game ended" });
    if (ending.bs !== undefined) Object.assign(d, { bs: ending.bs, ws: ending.ws });
    this.update(d);
    this.show(this.game.plies.length);
  }

  live() {
    const d = this.game && this.game.detail;
    return Boolean(d && d.r === "*" && !d.x && d.at);
  }

  /* In a live game, the side to move's clock counts down from its last move (the feed's time stamps). */
  startTicker() {
    if (this.ticker === null) this.ticker = setInterval(() => this.tick(), 200);
  }

  tick() {
    if (!this.game || !this.live() || this.ply !== this.game.plies.length) return;
    const d = this.game.detail;
    const n = this.game.plies.length;
    const last = n ? this.game.plies[n - 1] : null;
    const mover = last ? (last.color === "black" ? "white" : "black") : "black";
    const spent = Math.max(0, Date.now() - d.at);
    const clock = this.container.querySelector(`[data-clock="${mover}"]`);
    if (!clock) return;
    const left = last ? last.clocks[mover] : d.base;
    if (left !== null && left !== undefined) clock.textContent = fmtMs(Math.max(0, left - spent));
    else if (d.mt) clock.textContent = fmtMs(Math.max(0, d.mt - spent));
    clock.classList.add("running");
  }

  toggleAutoplay() {
    if (this.autoplay !== null) this.stopAutoplay();
    else this.startAutoplay();
  }

  startAutoplay() {
    this.stopAutoplay();
    if (this.ply >= this.game.plies.length && !this.live()) this.show(0);
    this.autoplay = setInterval(() => {
      if (this.ply < this.game.plies.length) this.show(this.ply + 1);
      else if (!this.live()) this.stopAutoplay(); // a live game: wait for its next move
    }, AUTOPLAY_MS);
    this.markAutoplay();
  }

  stopAutoplay() {
    if (this.autoplay !== null) clearInterval(this.autoplay);
    this.autoplay = null;
    this.markAutoplay();
  }

  markAutoplay() {
    const button = this.container.querySelector("[data-autoplay]");
    if (button) {
      button.dataset.autoplay = this.autoplay !== null ? "on" : "off";
      button.textContent = this.autoplay !== null ? "❚❚" : "⏵";
      button.title = this.autoplay !== null ? "pause (space)" : "play the moves (space)";
    }
  }

  close() {
    this.stopAutoplay();
    if (this.ticker !== null) clearInterval(this.ticker);
    this.ticker = null;
    document.removeEventListener("keydown", this.keyHandler);
    this.container.replaceChildren();
    this.container.hidden = true;
    this.game = null;
    if (this.onClose) this.onClose();
  }

  onKey(e) {
    if (e.target && (e.target.tagName === "INPUT" && e.target.type !== "range") || e.target.tagName === "SELECT") return;
    const n = this.game.plies.length;
    const moves = { ArrowLeft: this.ply - 1, ArrowRight: this.ply + 1, Home: 0, End: n };
    if (e.key in moves) {
      e.preventDefault();
      this.show(Math.max(0, Math.min(n, moves[e.key])));
    } else if (e.key === "Escape") {
      e.preventDefault();
      this.close();
    } else if (e.key === " ") {
      e.preventDefault();
      this.toggleAutoplay();
    }
  }

  build() {
    const d = this.game.detail;
    const n = this.game.plies.length;
    const side = (color, name, version) => el("div", { class: `player ${color}`, "data-side": color },
      el("span", { class: "swatch" }),
      el("span", { class: "pname", title: version || "" }, name),
      el("span", { class: "clock", "data-clock": color }, ""),
      el("span", { class: "score", "data-score": color }, ""));
    this.range = el("input", { type: "range", min: 0, max: n, value: 0, class: "scrub-range", "aria-label": "move" });
    this.range.addEventListener("input", () => this.show(Number(this.range.value)));
    const nav = (label, title, f) => el("button", { type: "button", title, onclick: () => this.show(f()) }, label);
    this.boardBox = el("div", { class: "boardbox" });
    this.moveInfo = el("div", { class: "moveinfo" });
    this.endInfo = el("div", { class: "endinfo" });
    this.moveList = el("ol", { class: "movelist", start: 1 });
    this.game.plies.forEach((ply, i) => {
      this.moveList.append(el("li", { class: `${ply.color}${ply.opening ? " opening" : ""}`, "data-ply": i + 1, onclick: () => this.show(i + 1) },
        el("span", { class: "n" }, `${i + 1}.`), ply.move));
    });
    const head = el("div", { class: "vhead" },
      el("div", { class: "vtitle" }, d.n === null || d.n === undefined ? "" : `#${d.n} `, el("b", {}, d.b), " vs ", el("b", {}, d.w),
        el("span", { class: "muted" }, ` · ${d.W}x${d.H}, komi ${fmtNum(d.k)}, ${d.tc} · ${d.id}`)),
      el("button", { type: "button", class: "close", title: "close (Esc)", onclick: () => this.close() }, "✕"));
    const warn = this.game.error ? el("div", { class: "warn" }, `The replay stopped: ${this.game.error}`) : this.checkScores();
    this.container.replaceChildren(el("div", { class: "viewer", role: "dialog", "aria-label": "game viewer" },
      head, warn,
      el("div", { class: "vmain" },
        el("div", { class: "vleft" }, this.boardBox,
          el("div", { class: "scrub" }, this.scrubTrack(), this.range,
            el("div", { class: "muted small legend" }, el("i", { class: "k-margin" }), "margin on the board (Black's side)",
              el("i", { class: "k-info" }), "the bots' scores (info)")),
          el("div", { class: "nav" }, nav("«", "first (Home)", () => 0), nav("◀", "back (←)", () => this.ply - 1),
            el("span", { class: "plyno" }, ""), nav("▶", "forward (→)", () => this.ply + 1), nav("»", "last (End)", () => n),
            el("button", { type: "button", "data-autoplay": "off", onclick: () => this.toggleAutoplay() }, "⏵"))),
        el("div", { class: "vside" },
          el("div", { class: "players" }, side("black", d.b, d.bv), side("white", d.w, d.wv)),
          this.moveInfo, this.endInfo, this.moveList))));
    this.container.hidden = false;
  }

  /* Agreement with the engine: the record's final scores came from protocol/rules.py. */
  checkScores() {
    const d = this.game.detail;
    if (d.x !== "normal" || d.bs === null || d.bs === undefined) return null;
    const board = boardAt(this.game, this.game.plies.length);
    const [b, w] = board.scores();
    if (b === d.bs && w + d.k === d.ws) return null;
    return el("div", { class: "warn" }, `The viewer's scores (${b} – ${fmtNum(w + d.k)}) differ from the record's (${fmtNum(d.bs)} – ${fmtNum(d.ws)}).`);
  }

  /* The scrub bar's track: the margin over the game, ticks where the lead changed, a mark at a fault. */
  scrubTrack() {
    const g = this.game;
    const n = g.plies.length;
    const Wd = 1000;
    const Ht = 36;
    const svg = svgEl("svg", { viewBox: `0 0 ${Wd} ${Ht}`, preserveAspectRatio: "none", class: "track" });
    const xs = (i) => (n ? (i / n) * Wd : 0);
    // The bots' own evaluations (an info's `score`, from the mover's side), from Black's side like the margin.
    const said = [];
    g.plies.forEach((ply, i) => {
      const score = ply.info && ply.info.info.score;
      if (typeof score === "number" && Number.isFinite(score)) said.push([i + 1, ply.color === "black" ? score : -score]);
    });
    const peak = Math.max(1, ...g.margins.map(Math.abs), ...said.map(([, v]) => Math.abs(v)));
    const ys = (m) => Ht / 2 - (m / peak) * (Ht / 2 - 2);
    svg.append(svgEl("line", { x1: 0, x2: Wd, y1: Ht / 2, y2: Ht / 2, class: "axis" }));
    if (g.openingLength) svg.append(svgEl("rect", { x: 0, y: 0, width: xs(g.openingLength), height: Ht, class: "opening-span" }));
    svg.append(svgEl("polyline", { points: g.margins.map((m, i) => `${xs(i)},${ys(m)}`).join(" "), class: "margin" }));
    if (said.length) {
      svg.append(svgEl("polyline", { points: said.map(([i, v]) => `${xs(i)},${ys(v)}`).join(" "), class: "info-score", "data-points": said.length }));
    }
    for (let i = 1; i < g.margins.length; i++) {
      if (Math.sign(g.margins[i]) !== Math.sign(g.margins[i - 1])) {
        svg.append(svgEl("line", { x1: xs(i), x2: xs(i), y1: 0, y2: Ht, class: "lead-change", "data-ply": i }));
      }
    }
    const d = g.detail;
    if (d.x && !["normal", "void", "aborted", ""].includes(d.x)) {
      svg.append(svgEl("rect", { x: xs(n) - 8, y: 0, width: 8, height: Ht, class: "fault", "data-ply": n }));
    }
    svg.addEventListener("click", (e) => {
      const box = svg.getBoundingClientRect();
      this.show(Math.round(((e.clientX - box.left) / box.width) * n));
    });
    return svg;
  }

  show(ply) {
    const g = this.game;
    const n = g.plies.length;
    this.ply = Math.max(0, Math.min(n, ply));
    const d = g.detail;
    const board = boardAt(g, this.ply);
    const last = this.ply ? g.plies[this.ply - 1] : null;
    this.boardBox.replaceChildren(drawBoard(board, last));
    const [b, w] = board.scores();
    const clocks = last ? last.clocks : { black: d.base, white: d.base };
    const q = (sel) => this.container.querySelector(sel);
    q('[data-score="black"]').textContent = String(b);
    q('[data-score="white"]').textContent = fmtNum(w + d.k);
    q('[data-score="white"]').title = `${w} + komi ${fmtNum(d.k)}`;
    q('[data-clock="black"]').textContent = clocks.black === null || clocks.black === undefined ? "" : fmtMs(clocks.black);
    q('[data-clock="white"]').textContent = clocks.white === null || clocks.white === undefined ? "" : fmtMs(clocks.white);
    const toMove = this.ply === n && (d.r !== "*" || d.x) ? null : (last ? (last.color === "black" ? "white" : "black") : "black");
    for (const color of ["black", "white"]) q(`.player.${color}`).classList.toggle("tomove", toMove === color);
    this.range.value = String(this.ply);
    q(".plyno").textContent = `${this.ply} / ${n}`;
    this.moveInfo.replaceChildren(...this.describeMove(last));
    const over = this.ply === n && d.r && (d.r !== "*" || d.x);
    this.endInfo.hidden = !over;
    if (over) this.endInfo.replaceChildren(...this.describeEnd());
    for (const li of this.moveList.querySelectorAll("li.current")) li.classList.remove("current");
    const li = this.moveList.querySelector(`li[data-ply="${this.ply}"]`);
    if (li) {
      li.classList.add("current");
      // Scroll the list only (scrollIntoView would scroll the whole page on a phone).
      const list = this.moveList;
      if (li.offsetTop < list.scrollTop || li.offsetTop + li.offsetHeight > list.scrollTop + list.clientHeight) {
        list.scrollTop = li.offsetTop - list.clientHeight / 2;
      }
    }
    this.container.dataset.ply = String(this.ply);
  }

  describeMove(ply) {
    if (!ply) return [el("div", { class: "muted" }, "Start: the empty board. Black moves first.")];
    const head = el("div", { class: "mv" }, el("b", {}, `${this.ply}. ${ply.move}`), ` by ${ply.color}`,
      ply.opening ? el("span", { class: "muted" }, " (opening)") : el("span", { class: "took", "data-took": "" }, ` · took ${fmtMs(ply.ms)}`),
      ply.cpu === null || ply.cpu === undefined ? null : el("span", { class: "muted" }, ` · CPU ${fmtMs(ply.cpu)}`),
      ply.lag ? el("span", { class: "muted", title: "the referee's own lateness during the move, not charged" }, ` · referee late ${fmtMs(ply.lag)}`) : null);
    const out = [head];
    if (ply.info) {
      const info = ply.info.info;
      const parts = [];
      for (const key of ["depth", "score", "nodes", "nps", "time_ms"]) {
        if (info[key] !== undefined) parts.push(el("span", { class: "kv" }, `${key} `, el("b", {}, fmtValue(info[key]))));
      }
      for (const [key, value] of Object.entries(info)) {
        if (!["type", "depth", "score", "nodes", "nps", "time_ms", "pv"].includes(key)) parts.push(el("span", { class: "kv" }, `${key} `, el("b", {}, fmtValue(value))));
      }
      out.push(el("div", { class: "info" }, ...parts));
      if (info.pv) out.push(el("div", { class: "pv" }, "pv ", el("code", {}, Array.isArray(info.pv) ? info.pv.join(" ") : String(info.pv))));
      if (ply.info.count > 1) out.push(el("div", { class: "muted" }, `last of ${ply.info.count} info messages`));
    } else if (!ply.opening) {
      out.push(el("div", { class: "muted" }, "no info from the bot"));
    }
    return out;
  }

  describeEnd() {
    const d = this.game.detail;
    const out = [el("div", { class: "result" }, el("b", {}, `${d.r} ${RESULT_TEXT[d.r] || ""}`),
      el("span", { class: `term t-${d.x}` }, termLabel(d.x))), el("div", { "data-why": "" }, d.why)];
    if (d.bs !== null && d.bs !== undefined) out.push(el("div", { class: "muted" }, `final score ${fmtNum(d.bs)} – ${fmtNum(d.ws)}`));
    if (d.ov) out.push(el("div", {}, `over its allowance by ${fmtMs(d.ov)}`));
    if (d.tail && d.tail.length) {
      out.push(el("div", { class: "muted" }, `${d.loser || "the offender"}'s stderr (last lines):`), el("pre", { class: "stderr" }, d.tail.join("\n")));
    }
    return out;
  }
}
