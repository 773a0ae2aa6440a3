// The analysis page's shared part: the document, errors shown on the page, formatting,
// colours, Chart.js charts that count their marks, hidden sections, sortable tables.
"use strict";
const started = performance.now();
const errors = [];
function reportError(message) {
  errors.push(message);
  document.getElementById("js-errors").textContent = errors.join("\n");
}
window.addEventListener("error", (e) => reportError(String(e.message || e)));

function $(id) { return document.getElementById(id); }
function h(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}
function fmtNs(ns) {
  if (typeof ns !== "number" || !isFinite(ns)) return String(ns);
  const a = Math.abs(ns);
  if (a >= 1e9) return (ns / 1e9).toFixed(3) + " s";
  if (a >= 1e6) return (ns / 1e6).toFixed(3) + " ms";
  if (a >= 1e3) return (ns / 1e3).toFixed(3) + " us";
  return ns.toFixed(0) + " ns";
}
function fmtNum(v) {
  if (typeof v !== "number") return v === null || v === undefined ? "" : String(v);
  if (Number.isInteger(v)) return v.toLocaleString("en-US");
  return v.toLocaleString("en-US", { maximumFractionDigits: Math.abs(v) >= 100 ? 1 : 3 });
}
const TYPE_COLORS = { computation: "#4e79a7", communication: "#e15759", memory: "#f28e2b", other: "#9c9c9c" };
const KIND_COLORS = { cpu_op: "#76b7b2", user_annotation: "#b07aa1", cuda_runtime: "#59a14f", cuda_sync: "#edc948",
                      kernel: "#4e79a7", kernel_task: "#8cb0d9", gpu_memcpy: "#f28e2b", gpu_memset: "#f28e2b",
                      other: "#c4a484" };
const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7", "#bab0ac"];
const PATH_COLOR = "#d62728";

const D = JSON.parse($("analysis").textContent);
const IS_JOB = Array.isArray(D.ranks);
const REPORTS = {};
// A what-if's document is its one report.
const ALL_REPORTS = D.reports || (D.columns && D.rows ? [D] : []);
for (const r of ALL_REPORTS) REPORTS[r.name] = r;
Chart.defaults.animation = false;
Chart.defaults.font.size = 11;
const charts = {};

// A chart drawn into canvas[data-chart=name]; the canvas says how many marks it drew.
function drawChart(name, config) {
  const canvas = document.querySelector(`canvas[data-chart="${name}"]`);
  const chart = new Chart(canvas, config);
  // A mark: a drawn element whose value draws something (a bar or a point of a finite,
  // non-zero value; a line's points).
  let marks = 0;
  chart.data.datasets.forEach((d, i) => {
    if (!chart.isDatasetVisible(i)) return;
    chart.getDatasetMeta(i).data.forEach((el, k) => {
      const v = d.data[k];
      const y = v !== null && typeof v === "object" ? v.y : v;
      if (Number.isFinite(y) && y !== 0 && !el.skip) ++marks;
    });
  });
  canvas.setAttribute("data-marks", String(marks));
  canvas.setAttribute("data-drawn", "1");
  charts[name] = chart;
}
// A section with nothing to draw keeps its heading and says why, in place of its content.
function hideUnless(id, shown, why) {
  const box = $(id);
  if (shown || !box) return;  // a part of a section already hidden goes with it
  const heading = box.querySelector("h2, h3");
  box.textContent = "";
  if (heading) box.appendChild(heading);
  box.appendChild(h("div", { class: "muted not-drawn" }, "Not drawn: " + why + "."));
  box.setAttribute("data-hidden", why);
}
// A report's rows, [] when it is absent.
function rows(name) { return REPORTS[name] ? REPORTS[name].rows : []; }
function num(v) { return typeof v === "number" ? v : NaN; }


// ---- Every report, sortable. ----
function sortable(table, columns, data) {
  const tbody = table.querySelector("tbody");
  const fill = (list) => {
    tbody.textContent = "";
    for (const r of list) {
      const tr = h("tr");
      for (const c of columns) tr.appendChild(h("td", { class: typeof r[c] === "number" ? "" : "s", title: String(r[c]) }, fmtNum(r[c])));
      tbody.appendChild(tr);
    }
  };
  fill(data);
  table.querySelectorAll("th").forEach((th, k) => th.addEventListener("click", () => {
    const asc = !th.classList.contains("sorted-asc");
    table.querySelectorAll("th").forEach((t) => t.classList.remove("sorted-asc", "sorted-desc"));
    th.classList.add(asc ? "sorted-asc" : "sorted-desc");
    const c = columns[k];
    fill([...data].sort((a, b) => {
      const x = a[c], y = b[c];
      const d = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
      return asc ? d : -d;
    }));
  }));
}

function drawTables() {
  const box = $("tables");
  const open = new Set(["op_sum", "hot_kernels", "op_roofline", "straggler_ranks", "whatif", "diff_explained", "job_diff_ranks"]);
  for (const r of ALL_REPORTS) {
    const d = h("details", { "data-report": r.name });
    if (open.has(r.name)) d.open = true;
    d.appendChild(h("summary", {}, `${r.title} (${r.rows.length} rows)`));
    if ((r.notes || []).length) d.appendChild(h("div", { class: "muted" }, r.notes.join(" ")));
    // A closed table's rows are made when it is first opened (a big job's reports hold
    // thousands: the page draws faster without them).
    const fill = () => {
      const wrap = h("div", { class: "table-wrap" }), table = h("table");
      const tr = h("tr");
      for (const c of r.columns) tr.appendChild(h("th", {}, c));
      const thead = h("thead"); thead.appendChild(tr);
      table.appendChild(thead); table.appendChild(h("tbody"));
      sortable(table, r.columns, r.rows);
      wrap.appendChild(table); d.appendChild(wrap);
    };
    if (d.open) fill();
    else d.addEventListener("toggle", () => { if (d.open && !d.querySelector("table")) fill(); });
    box.appendChild(d);
  }
}

