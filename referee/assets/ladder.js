// The ladder's pages (referee/ladder/server.py): filled from its JSON API, refreshed every 2 s.
"use strict";
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
  const response = await fetch(url, {cache: "no-store"});
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
function playingList(data) {
  const list = $("ul", {id: "playing"});
  for (const g of data.playing) list.append($("li", {}, `${g.black} – ${g.white} (${g.id}, since ${g.since})`));
  return list;
}
async function showLeaderboard() {
  const data = await getJSON("/api/leaderboard");
  const content = document.getElementById("content");
  content.replaceChildren(
    $("p", {id: "summary"}, `${data.games} games played${data.paused ? " — paused" : ""}; updated ${data.generated}`),
    leaderboardTable(data), $("h2", {}, "In progress"), playingList(data));
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
  document.getElementById("content").replaceChildren(
    $("p", {id: "status", class: "status-" + e.status}, `${e.status}: rating ${fmt(e.rating)} ± ${fmt(e.uncertainty)} after ${e.games} games` + (e.reason ? ` — ${e.reason}` : "")),
    $("h2", {}, "Rating history"), chart(e.versions), $("h2", {}, "Versions"), versions,
    $("h2", {}, "Recent games"), games, $("h2", {}, "Faults"), faults);
}
async function refresh() {
  const kind = document.body.dataset.page;
  try {
    if (kind === "leaderboard") await showLeaderboard(); else await showEntry(document.body.dataset.name);
  } catch (error) {
    document.getElementById("title").dataset.error = String(error);
  }
}
refresh();
setInterval(refresh, 2000);
