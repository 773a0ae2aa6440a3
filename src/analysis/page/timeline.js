// The analysis page's step timeline: lanes of host threads and device streams on a
// canvas, with zoom, pan, hover, launches joined to kernels and the critical path.
// ---- The timeline: lanes of host threads and device streams, drawn on a canvas. ----
const T = D.timeline && !D.timeline.error ? D.timeline : null;
const TL = { v0: 0, v1: 1, lanes: [], rowH: 13, labelW: 190, laneY: [], height: 0, hits: [] };

function eventColor(i) {
  const E = T.events;
  if (E.type[i] >= 0) return TYPE_COLORS[T.types[E.type[i]]] || "#9c9c9c";
  return KIND_COLORS[T.kinds[E.kind[i]]] || KIND_COLORS.other;
}

function prepareTimeline() {
  const E = T.events, n = E.lane.length;
  // The critical path's rows as columns beside the others.
  E.path_ns = new Float64Array(n);
  E.cause = new Int8Array(n).fill(-1);
  for (const [row, ns, cause] of T.critical_path.rows) { E.path_ns[row] = ns; E.cause[row] = cause; }
  // Each event's host time: a device event's launch start (its row's, or given apart when
  // the launch was left out), else its own start.
  E.host_ns = Float64Array.from(E.start_ns);
  for (let i = 0; i < n; ++i) if (E.launch[i] >= 0) E.host_ns[i] = E.start_ns[E.launch[i]];
  for (const [row, ns] of T.launched_ns || []) E.host_ns[row] = ns;
  TL.lanes = T.lanes.map((l) => ({ name: l.name, side: l.side, first: -1, last: -1, depth: 0, maxDur: 0 }));
  for (let i = 0; i < n; ++i) {
    const l = TL.lanes[E.lane[i]];
    if (l.first < 0) l.first = i;
    l.last = i;
    l.depth = Math.max(l.depth, E.depth[i] + 1);
    l.maxDur = Math.max(l.maxDur, E.dur_ns[i]);
  }
  for (const l of TL.lanes) {
    const cap = l.side === "python" ? 8 : 16;
    if (l.depth > cap) l.deeper = l.depth;
    l.depth = Math.min(l.depth, cap);
  }
  // Many lanes (a job's ranks): the device streams alone at first.
  if (TL.lanes.length > 64) $("show-host").checked = false;
  layoutLanes();
  const select = $("step");
  T.steps.forEach((s, k) => {
    const o = h("option", { value: String(k) }, s.name + (s.in_timeline ? "" : " (not in this page: --step)"));
    if (!s.in_timeline) o.disabled = true;
    if (s.chosen) o.selected = true;
    select.appendChild(o);
  });
  select.addEventListener("change", () => showStep(Number(select.value)));
  const o = T.omitted;
  // The budget keeps device work, then the critical path's host events, then other host events.
  const parts = [[o.host_events, "host"], [o.critical_path_events, "critical-path host"], [o.device_events, "device"]]
    .filter(([n]) => n > 0).map(([n, what]) => `${fmtNum(n)} ${what}`);
  const omitted = !o.events ? "" : ` The step has more events than the page holds: ${parts.join(", ")} events` +
    (o.shorter_than_ns > 0 ? ` (in the last tier kept, those shorter than ${fmtNs(o.shorter_than_ns)})` : "") +
    " are in the overview only.";
  const deep = TL.lanes.filter((l) => l.deeper);
  const nesting = deep.length ? ` ${deep.length} lane(s) nest deeper than drawn (${deep[0].name}: ` +
    `${deep[0].deeper} levels, ${deep[0].depth} shown).` : "";
  $("timeline-note").textContent = `shown: ${T.step}, ${T.why}.` + omitted + nesting +
    ` Critical path (${T.critical_path.step}): ${fmtNs(T.critical_path.length_ns)} of a ` +
    `${fmtNs(T.critical_path.span_ns)} span, ${fmtNum(T.critical_path.events)} events.`;
  const legend = $("timeline-legend");
  for (const [k, c] of Object.entries(TYPE_COLORS)) {
    const s = h("span"); s.appendChild(h("i", { style: `background:${c}` })); s.append("kernel: " + k); legend.appendChild(s);
  }
  for (const k of ["cpu_op", "user_annotation", "cuda_runtime", "cuda_sync", "other"]) {
    const s = h("span"); s.appendChild(h("i", { style: `background:${KIND_COLORS[k]}` })); s.append(k); legend.appendChild(s);
  }
  const s = h("span"); s.appendChild(h("i", { style: `background:${PATH_COLOR};height:3px` }));
  s.append("on the critical path"); legend.appendChild(s);
}

// Each shown lane's height and place (host lanes shown or not).
function layoutLanes() {
  const host = $("show-host").checked;
  let y = 0;
  for (const l of TL.lanes) {
    l.hidden = !host && l.side !== "device";
    l.y = y;
    if (!l.hidden) y += l.depth * TL.rowH + 6;
  }
  TL.height = Math.max(y, 40);
}

// The step holding host time t, as the analysis counts a unit's events (trace/units.h's
// UnitAt): the latest step that begins at or before t, if t is not after its end; -1 if none.
function stepAt(t) {
  let lo = 0, hi = T.steps.length;
  while (lo < hi) { const m = (lo + hi) >> 1; if (T.steps[m].begin_ns <= t) lo = m + 1; else hi = m; }
  return lo > 0 && t <= T.steps[lo - 1].end_ns ? lo - 1 : -1;
}

// The kernels of step k in the timeline: device kernels whose launch (or, without one,
// their own start) is in the step.
function kernelsInStep(k) {
  const E = T.events;
  let n = 0;
  for (let i = 0; i < E.lane.length; ++i) {
    if (T.kinds[E.kind[i]] !== "kernel") continue;
    if (stepAt(E.host_ns[i]) === k) ++n;
  }
  return n;
}

function showStep(k) {
  const s = T.steps[k];
  let end = s.end_ns;
  const E = T.events;  // the step's device work may end after its host window
  for (let i = 0; i < E.lane.length; ++i) {
    if (E.type[i] < 0) continue;
    if (stepAt(E.host_ns[i]) === k) end = Math.max(end, E.start_ns[i] + E.dur_ns[i]);
  }
  TL.v0 = s.begin_ns;
  TL.v1 = Math.max(end, s.begin_ns + 1);
  TL.step = k;
  const canvas = $("timeline");
  canvas.setAttribute("data-step", s.name);
  canvas.setAttribute("data-step-kernels", String(kernelsInStep(k)));
  canvas.setAttribute("data-step-kernels-json", String(s.kernels));
  drawTimeline();
  drawOverview();
}

function sizeCanvas(canvas, cssW, cssH) {
  const r = window.devicePixelRatio || 1;
  canvas.width = Math.round(cssW * r);
  canvas.height = Math.round(cssH * r);
  canvas.style.width = cssW + "px";
  canvas.style.height = cssH + "px";
  const ctx = canvas.getContext("2d");
  ctx.setTransform(r, 0, 0, r, 0, 0);
  return ctx;
}

function drawTimeline() {
  const canvas = $("timeline");
  const W = $("timeline-wrap").clientWidth || 1180;
  const ctx = sizeCanvas(canvas, W, TL.height + 18);
  const E = T.events, x0 = TL.labelW, plotW = W - x0 - 4;
  const scale = plotW / (TL.v1 - TL.v0);
  const X = (t) => x0 + (t - TL.v0) * scale;
  const showPath = $("show-path").checked, showFlows = $("show-flows").checked;
  ctx.clearRect(0, 0, W, TL.height + 18);
  ctx.font = "11px system-ui, sans-serif";
  TL.hits = [];
  let drawn = 0;
  const pathRects = [];
  for (const l of TL.lanes) {
    if (l.hidden) continue;
    ctx.fillStyle = l.side === "device" ? "#eef3fa" : l.side === "python" ? "#f8f6f2" : "#f3f5f8";
    ctx.fillRect(0, l.y, W, l.depth * TL.rowH + 4);
    ctx.fillStyle = "#38404d";
    ctx.fillText(l.name.length > 30 ? l.name.slice(0, 29) + "…" : l.name, 4, l.y + 11);
    if (l.first < 0) continue;
    // The lane's events from the first that can reach the view.
    let lo = l.first, hi = l.last + 1;
    const from = TL.v0 - l.maxDur;
    while (lo < hi) { const m = (lo + hi) >> 1; if (E.start_ns[m] < from) lo = m + 1; else hi = m; }
    const lastX = new Float64Array(l.depth).fill(-1);
    for (let i = lo; i <= l.last; ++i) {
      const s = E.start_ns[i];
      if (s > TL.v1) break;
      const e = s + E.dur_ns[i];
      if (e < TL.v0 || E.depth[i] >= l.depth) continue;
      const a = Math.max(X(s), x0), b = Math.min(X(e), W - 4);
      const w = Math.max(b - a, 1);
      const d = E.depth[i], y = l.y + 2 + d * TL.rowH;
      if (E.path_ns[i] > 0 && showPath) pathRects.push([a, y, w]);
      if (b < lastX[d] + 0.5 && w <= 1) continue;  // sub-pixel neighbours share a pixel
      lastX[d] = b;
      ctx.fillStyle = eventColor(i);
      ctx.fillRect(a, y, w, TL.rowH - 2);
      if (w > 40) {
        ctx.fillStyle = "#fff";
        const name = T.names[E.name[i]];
        ctx.save(); ctx.beginPath(); ctx.rect(a, y, w, TL.rowH); ctx.clip();
        ctx.fillText(name, a + 2, y + 9.5);
        ctx.restore();
      }
      TL.hits.push([a, y, w, i]);
      ++drawn;
    }
  }
  // The critical path: a bar under each of its events (outlines would hide the events).
  ctx.fillStyle = PATH_COLOR;
  for (const [a, y, w] of pathRects) ctx.fillRect(a, y + TL.rowH - 4, Math.max(w, 2), 3);
  if (showFlows) {
    let flows = 0;
    ctx.strokeStyle = "rgba(80,80,80,0.45)";
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (const [a, y, w, i] of TL.hits) {
      const j = E.launch[i];
      const l = TL.lanes[E.lane[j < 0 ? 0 : j]];
      if (j < 0 || l.hidden || ++flows > 3000) continue;
      const ys = l.y + 2 + Math.min(E.depth[j], l.depth - 1) * TL.rowH + TL.rowH - 2;
      ctx.moveTo(X(E.start_ns[j]), ys);
      ctx.lineTo(a, y);
    }
    ctx.stroke();
  }
  // The time axis.
  ctx.fillStyle = "#38404d";
  // Ticks at round times from the step's start.
  const zero = T.steps[TL.step].begin_ns;
  const span = TL.v1 - TL.v0, step = Math.pow(10, Math.floor(Math.log10(span / 6)));
  const tick = [1, 2, 5, 10].map((m) => m * step).find((s) => span / s <= 8) || step * 10;
  for (let t = zero + Math.ceil((TL.v0 - zero) / tick) * tick; t <= TL.v1; t += tick) {
    ctx.fillRect(X(t), TL.height, 1, 4);
    ctx.fillText(fmtNs(t - zero), X(t) + 2, TL.height + 14);
  }
  canvas.setAttribute("data-drawn", String(drawn));
}

function drawOverview() {
  const canvas = $("overview");
  const W = $("timeline-wrap").clientWidth || 1180, H = 36;
  const ctx = sizeCanvas(canvas, W, H);
  const o = T.overview, bins = o.device_ns.length;
  const span = Math.max(o.end_ns - o.begin_ns, 1), bw = span / bins;
  const maxD = Math.max(...o.device_ns, 1), maxH = Math.max(...o.host_runtime_ns, 1);
  const X = (t) => (t - o.begin_ns) / span * W;
  let marks = 0;
  for (let k = 0; k < bins; ++k) {
    const x = k / bins * W, w = W / bins + 0.5;
    if (o.device_ns[k] > 0) {
      ctx.fillStyle = TYPE_COLORS.computation;
      const hh = o.device_ns[k] / maxD * 16;
      ctx.fillRect(x, 18 - hh, w, hh); ++marks;
    }
    if (o.host_runtime_ns[k] > 0) {
      ctx.fillStyle = KIND_COLORS.cuda_runtime;
      const hh = o.host_runtime_ns[k] / maxH * 16;
      ctx.fillRect(x, 36 - hh, w, hh); ++marks;
    }
  }
  ctx.strokeStyle = "#1d2430";
  for (const s of T.steps) ctx.strokeRect(X(s.begin_ns), 0.5, Math.max(X(s.end_ns) - X(s.begin_ns), 1), H - 1);
  ctx.fillStyle = "rgba(214,39,40,0.18)";
  ctx.fillRect(X(TL.v0), 0, Math.max(X(TL.v1) - X(TL.v0), 2), H);
  canvas.setAttribute("data-marks", String(marks));
  canvas.onclick = (ev) => {
    const r = canvas.getBoundingClientRect();
    const t = o.begin_ns + (ev.clientX - r.left) / W * span, half = (TL.v1 - TL.v0) / 2;
    TL.v0 = t - half; TL.v1 = t + half;
    drawTimeline(); drawOverview();
  };
}

function timelineFacts(i) {
  const E = T.events, kind = T.kinds[E.kind[i]];
  const lines = [T.names[E.name[i]], `${kind} on ${T.lanes[E.lane[i]].name}`,
                 `start ${fmtNs(E.start_ns[i] - T.steps[TL.step].begin_ns)} into ${T.steps[TL.step].name}, ` +
                 `duration ${fmtNs(E.dur_ns[i])}`];
  if (E.type[i] >= 0) lines.push(`type: ${T.types[E.type[i]]}`);
  const j = E.launch[i];
  if (j >= 0) lines.push(`launched by ${T.names[E.name[j]]}; launch to start ${fmtNs(E.start_ns[i] - E.start_ns[j] - E.dur_ns[j])}`);
  if (E.path_ns[i] > 0) lines.push(`critical path: ${fmtNs(E.path_ns[i])} (${T.causes[E.cause[i]]})`);
  return lines.join("\n");
}

function wireTimeline() {
  const canvas = $("timeline"), tip = $("tip");
  let drag = null;
  canvas.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const r = canvas.getBoundingClientRect(), W = r.width, x0 = TL.labelW;
    const f = Math.min(Math.max((ev.clientX - r.left - x0) / (W - x0 - 4), 0), 1);
    const t = TL.v0 + f * (TL.v1 - TL.v0), k = ev.deltaY > 0 ? 1.25 : 0.8;
    const span = Math.max((TL.v1 - TL.v0) * k, 10);
    TL.v0 = t - f * span; TL.v1 = TL.v0 + span;
    drawTimeline(); drawOverview();
  }, { passive: false });
  canvas.addEventListener("mousedown", (ev) => { drag = { x: ev.clientX, v0: TL.v0, v1: TL.v1 }; });
  window.addEventListener("mouseup", () => { drag = null; });
  canvas.addEventListener("mousemove", (ev) => {
    const r = canvas.getBoundingClientRect();
    if (drag) {
      const dt = (ev.clientX - drag.x) / (r.width - TL.labelW - 4) * (drag.v1 - drag.v0);
      TL.v0 = drag.v0 - dt; TL.v1 = drag.v1 - dt;
      drawTimeline(); drawOverview();
      return;
    }
    const x = ev.clientX - r.left, y = ev.clientY - r.top;
    const hit = TL.hits.find(([a, yy, w]) => x >= a && x <= a + w && y >= yy && y <= yy + TL.rowH);
    if (!hit) { tip.style.display = "none"; return; }
    tip.textContent = timelineFacts(hit[3]);
    tip.style.display = "block";
    tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - 580) + "px";
    tip.style.top = ev.clientY + 14 + "px";
  });
  canvas.addEventListener("mouseleave", () => { tip.style.display = "none"; });
  $("show-path").addEventListener("change", drawTimeline);
  $("show-flows").addEventListener("change", drawTimeline);
  $("show-host").addEventListener("change", () => { layoutLanes(); drawTimeline(); });
  $("reset").addEventListener("click", () => showStep(TL.step));
  window.addEventListener("resize", () => { drawTimeline(); drawOverview(); });
}

function drawTimelineSection() {
  if (!T) {
    hideUnless("timeline-section", false, D.timeline ? D.timeline.error : "no timeline in this document");
    return;
  }
  prepareTimeline();
  wireTimeline();
  showStep(T.steps.findIndex((s) => s.chosen));
}

