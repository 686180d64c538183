/* Mirrorline's web UI: the flows between clusters, their state and their metrics.
 *
 * It reads only the service's REST API (v2), with relative URLs: the page is
 * <base>/ui/index.html, so `../v2/...` works behind a proxy's base path too.
 * Every 5 s it reads the replications and each flow's metrics over the chosen
 * window, then redraws the graph (inline SVG), the flows table and, for the
 * selected flow, its topics and charts. Plain JavaScript, no dependencies.
 * Elements a test reads carry `data-testid`, and numbers their exact value in
 * `data-value`. The selected flow and window are kept in the URL's hash.
 */
"use strict";

const API = "../";
const REFRESH_MS = 5000;
const FALLBACK_WINDOWS = { windows: ["1m", "5m", "15m", "1h"], default: "5m" };
const FLOW_METRICS = ["record-rate", "byte-rate", "replication-latency-ms", "replication-records-lag"];
const TOPIC_METRICS = ["record-rate", "replication-records-lag", "replication-latency-ms"];
const CHARTS = [
  ["record-rate", "Records/s", fmtNumber],
  ["replication-latency-ms", "Replication latency (ms)", fmtNumber],
  ["replication-records-lag", "Lag (records)", fmtCount],
];
const COLORS = { healthy: "#2e7d32", warning: "#d97706", unhealthy: "#c62828", inactive: "#9e9e9e" };

const ui = { window: null, selected: null, timer: null, generation: 0, updated: null };

// -- DOM helpers -------------------------------------------------------------------------

const $ = (id) => document.getElementById(id);
const el = (tag, attrs, ...children) => make(document.createElement(tag), attrs, children);
const svg = (tag, attrs, ...children) =>
  make(document.createElementNS("http://www.w3.org/2000/svg", tag), attrs, children);

function make(node, attrs, children) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "onclick") node.addEventListener("click", value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

// -- formatting --------------------------------------------------------------------------

function fmtNumber(v) {
  if (v === null || v === undefined) return "—";
  if (Math.abs(v) >= 100) return Math.round(v).toLocaleString("en-US");
  return v.toFixed(Math.abs(v) >= 10 ? 1 : 2);
}

function fmtCount(v) {
  return v === null || v === undefined ? "—" : Math.round(v).toLocaleString("en-US");
}

function fmtBytes(v) {
  if (v === null || v === undefined) return "—";
  const units = ["B", "KiB", "MiB", "GiB"];
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
  return `${fmtNumber(v)} ${units[i]}`;
}

function fmtAge(ms) {
  if (ms === null || ms === undefined) return "—";
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 90) return `${s}s ago`;
  if (s < 90 * 60) return `${Math.round(s / 60)}m ago`;
  return `${Math.round(s / 3600)}h ago`;
}

function fmtClock(date) {
  return [date.getHours(), date.getMinutes(), date.getSeconds()]
    .map((n) => String(n).padStart(2, "0")).join(":");
}

// -- the API -----------------------------------------------------------------------------

async function api(path) {
  const response = await fetch(API + path, { headers: { Accept: "application/json" }, cache: "no-store" });
  let body = null;
  try { body = await response.json(); } catch (e) { /* not JSON: the status says enough */ }
  if (!response.ok) {
    throw new Error(`${path}: ${response.status} ${(body && body.error) || response.statusText}`);
  }
  return body;
}

const flowKey = (r) => `${r.source}->${r.target}`;

/** Metric documents by name: the flow's (`topic` undefined) or one of its source topics'. */
async function metrics(r, names, span, topic) {
  const enc = encodeURIComponent;
  const base = topic === undefined
    ? `v2/cluster-metrics/${enc(r.source)}/${enc(r.target)}`
    : `v2/topic-metrics/${enc(r.source)}/${enc(r.target)}/${enc(topic)}`;
  const docs = await Promise.all(names.map((m) => api(`${base}/${m}?window=${enc(span)}`)));
  return Object.fromEntries(names.map((m, i) => [m, docs[i]]));
}

/** The numbers a table row shows, from metric documents (null: no data). */
function summary(m) {
  if (!m) return { rate: null, bytes: null, latency: null, lag: null };
  const lag = m["replication-records-lag"];
  return {
    rate: m["record-rate"] ? m["record-rate"].avg : null,
    bytes: m["byte-rate"] ? m["byte-rate"].avg : null,
    latency: m["replication-latency-ms"].avg,
    lag: lag.max === null ? null : lag.sum,
  };
}

// -- refreshing --------------------------------------------------------------------------

async function refresh() {
  clearTimeout(ui.timer);
  const generation = ++ui.generation;
  const span = ui.window; // the window this refresh reads
  const errors = [];
  try {
    const doc = await api("v2/replications");
    const flows = await Promise.all(doc.replications.map(async (r) => {
      if (r.unreachable) return { r, m: null };
      try { return { r, m: await metrics(r, FLOW_METRICS, span) }; }
      catch (e) { errors.push(e.message); return { r, m: null }; }
    }));
    const selected = flows.find((f) => flowKey(f.r) === ui.selected) || null;
    const topics = selected && !selected.r.unreachable
      ? await Promise.all(Object.entries(selected.r.topics).map(async ([source, remote]) => {
        try { return { source, remote, m: await metrics(selected.r, TOPIC_METRICS, span, source) }; }
        catch (e) { return { source, remote, m: null, error: e.message }; }
      }))
      : [];
    if (generation !== ui.generation) return; // a newer refresh has started
    renderGraph(flows, doc.services);
    renderServices(doc.services);
    renderFlows(flows);
    renderDetail(selected, topics, span);
    showError(errors.length ? `Some metrics could not be read: ${errors.join("; ")}` : null);
    ui.updated = fmtClock(new Date());
    $("updated").textContent = `updated ${ui.updated}`;
    document.body.dataset.window = span;
  } catch (e) {
    if (generation !== ui.generation) return;
    const shown = ui.updated ? `the page shows data from ${ui.updated}` : "nothing to show yet";
    showError(`The Mirrorline service API does not answer (${e.message}); ${shown}.`);
  } finally {
    if (generation === ui.generation) ui.timer = setTimeout(refresh, REFRESH_MS);
  }
}

function showError(message) {
  const banner = $("error-banner");
  banner.hidden = !message;
  banner.textContent = message || "";
}

function saveHash() {
  const params = new URLSearchParams();
  if (ui.selected) params.set("flow", ui.selected);
  params.set("window", ui.window);
  history.replaceState(null, "", `#${params}`);
}

function select(key) {
  ui.selected = ui.selected === key ? null : key;
  saveHash();
  refresh();
}

// -- the graph ---------------------------------------------------------------------------

function renderGraph(flows, services) {
  const aliases = [...new Set([
    ...flows.flatMap(({ r }) => [r.source, r.target]),
    ...services.flatMap((s) => s.targets),
  ])].sort();
  const width = 560, height = aliases.length > 2 ? 300 : 170;
  const pos = {}; // centre and radii of each cluster's ellipse, around a larger ellipse
  aliases.forEach((alias, i) => {
    const angle = Math.PI + (2 * Math.PI * i) / aliases.length;
    const far = aliases.length > 1;
    pos[alias] = {
      x: width / 2 + (far ? (width / 2 - 70) * Math.cos(angle) : 0),
      y: height / 2 + (far ? (height / 2 - 45) * Math.sin(angle) : 0),
      rx: Math.max(30, alias.length * 4 + 14), ry: 24,
    };
  });
  const markers = Object.entries(COLORS).map(([health, color]) =>
    svg("marker", { id: `arrow-${health}`, viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 9,
      markerHeight: 9, markerUnits: "userSpaceOnUse", orient: "auto" },
    svg("path", { d: "M0,0 L10,5 L0,10 z", fill: color })));
  const edges = flows.map((f) => edge(f, pos[f.r.source], pos[f.r.target]));
  const nodes = aliases.map((alias) => svg("g",
    { "data-testid": "graph-node", "data-cluster": alias, class: "node" },
    svg("ellipse", { cx: pos[alias].x, cy: pos[alias].y, rx: pos[alias].rx, ry: pos[alias].ry }),
    svg("text", { x: pos[alias].x, y: pos[alias].y + 4, "text-anchor": "middle" }, alias)));
  const empty = aliases.length ? null
    : svg("text", { x: width / 2, y: height / 2, "text-anchor": "middle", class: "muted" }, "no clusters yet");
  $("graph").replaceChildren(svg("svg",
    { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "clusters and flows" },
    svg("defs", {}, markers), edges, nodes, empty));
}

/** A flow's arrow: a quadratic curve bent to its left, so that A->B and B->A never overlap;
 * its label sits on the outside of the bend. */
function edge({ r, m }, p, q) {
  const dx = q.x - p.x, dy = q.y - p.y, len = Math.hypot(dx, dy) || 1;
  const normal = { x: -dy / len, y: dx / len };
  const bend = Math.min(45, len * 0.25);
  const c = { x: (p.x + q.x) / 2 + normal.x * bend, y: (p.y + q.y) / 2 + normal.y * bend };
  const rim = (a, b) => { // where the line from a's centre towards b leaves a's ellipse, plus a gap
    const l = Math.hypot(b.x - a.x, b.y - a.y) || 1, ux = (b.x - a.x) / l, uy = (b.y - a.y) / l;
    const d = 1 / Math.hypot(ux / a.rx, uy / a.ry) + 2;
    return { x: a.x + ux * d, y: a.y + uy * d };
  };
  const start = rim(p, c), end = rim(q, c);
  const mid = { x: 0.25 * start.x + 0.5 * c.x + 0.25 * end.x, y: 0.25 * start.y + 0.5 * c.y + 0.25 * end.y };
  const anchor = normal.x > 0.4 ? "start" : normal.x < -0.4 ? "end" : "middle";
  const key = flowKey(r);
  const rate = summary(m).rate;
  return svg("g", {
    "data-testid": "graph-edge", "data-flow": key, "data-health": r.health,
    class: `edge${r.unreachable ? " unreachable" : ""}${key === ui.selected ? " selected" : ""}`,
    onclick: () => select(key),
  },
  svg("title", {}, `${key}: ${r.state}${r.reason ? ` (${r.reason})` : ""}`),
  svg("path", { d: `M${start.x},${start.y} Q${c.x},${c.y} ${end.x},${end.y}`, fill: "none",
    stroke: COLORS[r.health] || COLORS.inactive, "marker-end": `url(#arrow-${COLORS[r.health] ? r.health : "inactive"})` }),
  svg("text", { x: mid.x + normal.x * 8, y: mid.y + normal.y * 8 + 4, "text-anchor": anchor },
    r.unreachable ? "unreachable" : rate === null ? r.state : `${fmtNumber(rate)} rec/s`));
}

function renderServices(services) {
  $("services").replaceChildren(...services.map((s) => el("li", {
    "data-testid": "service", "data-reachable": s.reachable, class: s.reachable ? "" : "bad",
  },
  el("span", { class: "dot" }), `${s.id}${s.local ? " (this service)" : ""} — targets ${s.targets.join(", ") || "none"}`,
  s.reachable ? null : ` — does not answer: ${s.error}`)));
}

// -- the tables --------------------------------------------------------------------------

function numCell(testid, value, format) {
  return el("td", { class: "num", "data-testid": testid, "data-value": value === null ? "" : value },
    value === null ? "—" : format(value));
}

function ageCell(testid, ms) {
  return el("td", { "data-testid": testid, "data-value": ms === null ? "" : ms,
    title: ms === null ? null : new Date(ms).toISOString() }, fmtAge(ms));
}

function renderFlows(flows) {
  const rows = flows.map(({ r, m }) => {
    const key = flowKey(r), s = summary(m);
    return el("tr", {
      "data-testid": "flow-row", "data-flow": key, "data-health": r.health, "data-state": r.state,
      class: `health-${r.health}${r.unreachable ? " unreachable" : ""}${key === ui.selected ? " selected" : ""}`,
      onclick: () => select(key), title: "Show its topics and charts",
    },
    el("td", { "data-testid": "flow-name" }, el("strong", {}, r.source), " → ", el("strong", {}, r.target),
      r.exactly_once ? el("span", { class: "tag" }, "exactly once") : null),
    el("td", { "data-testid": "flow-state", "data-value": r.state },
      el("span", { class: `badge health-${r.health}` }, r.state),
      r.unreachable ? el("span", { class: "badge unreachable", "data-testid": "flow-unreachable" }, "service unreachable") : null,
      r.reason ? el("div", { class: "reason" }, r.reason) : null,
      r.problems.map((p) => el("div", { class: "problem" }, `⚠ ${p}`))),
    numCell("flow-records-rate", s.rate, fmtNumber),
    numCell("flow-bytes-rate", s.bytes, fmtBytes),
    numCell("flow-latency", s.latency, fmtNumber),
    numCell("flow-lag", s.lag, fmtCount),
    ageCell("flow-heartbeat", r.last_heartbeat_ms),
    ageCell("flow-checkpoint", r.last_checkpoint_ms),
    el("td", { "data-testid": "flow-served-by", class: "served" }, r.served_by));
  });
  $("flows-body").replaceChildren(...(rows.length ? rows
    : [el("tr", {}, el("td", { colspan: 9, class: "muted" }, "No replications known to this service yet."))]));
}

function renderDetail(selected, topics, span) {
  const box = $("detail");
  box.hidden = !selected;
  if (!selected) return;
  const { r, m } = selected;
  box.dataset.flow = flowKey(r);
  $("detail-title").textContent = `${r.source} → ${r.target}`;
  $("detail-meta").textContent = [
    `state ${r.state}`, `active driver ${r.active_driver || "none"}`,
    r.exactly_once ? "exactly once" : "at least once", `window ${span}`, `served by ${r.served_by}`,
  ].join(" · ");
  $("detail-verified").textContent = verifiedText(r.last_verification);
  $("detail-verified").dataset.verdict = r.last_verification ? r.last_verification.verdict : "none";
  $("topics-body").replaceChildren(...topics.map(({ source, remote, m: tm, error }) => {
    const s = summary(tm);
    return el("tr", { "data-testid": "topic-row", "data-topic": source, title: error || null },
      el("td", { "data-testid": "topic-source" }, source),
      el("td", { "data-testid": "topic-remote" }, remote),
      numCell("topic-records-rate", s.rate, fmtNumber),
      numCell("topic-lag", s.lag, fmtCount),
      numCell("topic-latency", s.latency, fmtNumber));
  }));
  $("charts").replaceChildren(...(m ? CHARTS.map(([metric, label, format]) => chart(m[metric], label, format))
    : [el("p", { class: "muted" }, r.unreachable ? "The service serving this flow does not answer." : "No metrics.")]));
}

/** "last verified: <time> — identical / N differences", from `mirrorline verify`'s summary. */
function verifiedText(v) {
  if (!v) return "last verified: never (mirrorline verify)";
  const when = new Date(v.finished_ms).toISOString().replace("T", " ").slice(0, 19) + " UTC";
  const verdict = v.differences ? `${fmtCount(v.differences)} differences` : "identical";
  const scope = [v.topics ? `topics ${v.topics}` : "", v.since ? `since ${v.since}` : "",
    v.until ? `until ${v.until}` : ""].filter(Boolean).join(", ");
  return `last verified: ${when} — ${verdict} (${fmtCount(v.checked)} records checked${scope ? `; ${scope}` : ""})`;
}

// -- charts ------------------------------------------------------------------------------

function niceMax(v) {
  if (!(v > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(v));
  return [1, 2, 5, 10].map((f) => f * power).find((n) => n >= v);
}

/** Axis labels: three significant digits at most, thousands as k. */
function fmtAxis(v) {
  return v >= 10000 ? `${Number((v / 1000).toPrecision(3))}k` : String(Number(v.toPrecision(3)));
}

/** A line chart of a metric's points over its window (the last step is the one under way);
 * steps without latency (nothing replicated) break the line. */
function chart(doc, label, format) {
  const width = 360, height = 150, left = 44, right = 10, top = 10, bottom = 20;
  const end = Date.now(), start = end - doc.window_seconds * 1000, stepMs = doc.step_seconds * 1000;
  const points = doc.points;
  const breaks = doc.metric.endsWith("latency-ms");
  const ceiling = niceMax(Math.max(0, ...points.map((p) => p.value)));
  const x = (t) => left + (width - left - right) * Math.min(1, Math.max(0, (t - start) / (end - start)));
  const y = (v) => top + (height - top - bottom) * (1 - v / ceiling);
  const segments = [];
  points.forEach((p, i) => {
    if (i === 0 || (breaks && p.time_ms - points[i - 1].time_ms > stepMs * 1.5)) segments.push([]);
    segments[segments.length - 1].push([x(p.time_ms + stepMs / 2), y(p.value)]);
  });
  const line = segments.map((s) => `M${s.map(([px, py]) => `${px.toFixed(1)},${py.toFixed(1)}`).join("L")}`).join("");
  const dots = segments.filter((s) => s.length === 1).map(([[px, py]]) => svg("circle", { cx: px, cy: py, r: 2.5 }));
  const grid = [0, 0.5, 1].map((f) => svg("g", { class: "grid" },
    svg("line", { x1: left, x2: width - right, y1: y(ceiling * f), y2: y(ceiling * f) }),
    svg("text", { x: left - 4, y: y(ceiling * f) + 4, "text-anchor": "end" }, fmtAxis(ceiling * f))));
  const stats = doc.max === null ? "no data" : doc.metric === "replication-records-lag"
    ? `now ${format(doc.sum)} · max ${format(doc.max)} per partition`
    : `avg ${format(doc.avg)} · max ${format(doc.max)}`;
  return el("figure", { class: "chart", "data-testid": "chart", "data-metric": doc.metric, "data-points": points.length },
    el("figcaption", {}, el("strong", {}, label), ` ${stats}`),
    svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": `${label} over ${doc.window}` },
      grid,
      svg("text", { x: left, y: height - 4, class: "axis" }, `−${doc.window}`),
      svg("text", { x: width - right, y: height - 4, "text-anchor": "end", class: "axis" }, "now"),
      svg("path", { d: line, class: "line", "data-testid": "chart-line" }),
      dots));
}

// -- start -------------------------------------------------------------------------------

async function init() {
  const params = new URLSearchParams(location.hash.slice(1));
  ui.selected = params.get("flow");
  let known = FALLBACK_WINDOWS;
  try { known = await api("v2/windows"); } catch (e) { /* an older service: the usual windows */ }
  ui.window = known.windows.includes(params.get("window")) ? params.get("window") : known.default;
  const choice = $("window-select");
  choice.replaceChildren(...known.windows.map((w) => el("option", { value: w, selected: w === ui.window }, w)));
  choice.addEventListener("change", () => { ui.window = choice.value; saveHash(); refresh(); });
  refresh();
}

init();
