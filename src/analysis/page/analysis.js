// The analysis page of a trace or a job: the verdict, the findings, the breakdowns per
// rank, the stragglers and the operators' roofline.
function drawHeader() {
  if (IS_JOB) {
    const devices = [...new Set(D.ranks.map((r) => r.device).filter((d) => d))].join(", ") || "device not named";
    $("title").textContent = `tierscope analysis: a job of ${D.ranks.length} ranks`;
    $("subtitle").textContent = `${devices} · ${D.alignment || ""}`;
    const marked = D.ranks.filter((r) => r.quality_failed);
    const v = $("verdict");
    v.className = "verdict " + (marked.length ? "marked" : "pass");
    v.textContent = marked.length
      ? `trace quality: ${marked.length} of ${D.ranks.length} ranks failed a check — ` +
        marked.map((r) => `rank ${r.rank}: ${r.quality}`).join("; ") +
        ". The tables these affect are marked; no finding rests on them."
      : `trace quality: no rank failed a check (${D.ranks.length} ranks; warnings in the ranks table)`;
  } else {
    const t = D.trace;
    $("title").textContent = `tierscope analysis: ${t.source.split("/").pop()}`;
    $("subtitle").textContent = `${t.source} · ${t.format} · ${t.runtime} · ${t.device || "device not named"} · ` +
      `${fmtNum(t.events)} events · ` +
      (D.units > 0 ? `${D.units} ${D.unit || "unit"}${D.units === 1 ? "" : "s"}` : "no work units (one window: the whole trace)");
    const failed = rows("trace_quality").filter((r) => r.Status === "FAIL");
    const v = $("verdict");
    v.className = "verdict " + (failed.length || !t.events ? "marked" : "pass");
    v.textContent = !t.events ? "The trace holds no timeline event: there is nothing to analyse."
      : D.quality + (failed.length ? ". The tables the failed checks affect are marked; no finding rests on them." : "");
  }
}

function drawFindings() {
  const box = $("findings");
  if (!D.findings.length) box.appendChild(h("div", { class: "muted" }, "No rule fired: nothing stands out."));
  for (const f of D.findings) {
    const d = h("div", { class: "finding", "data-rule": f.rule });
    d.appendChild(h("div", { class: "t" }, f.title));
    d.appendChild(h("div", { class: "x" }, `explains ${fmtNs(f.explained_ns)} · rule ${f.rule} (${f.threshold})`));
    const ul = h("ul");
    for (const e of f.evidence) ul.appendChild(h("li", {}, e));
    for (const e of f.examples) ul.appendChild(h("li", { class: "muted" }, e));
    d.appendChild(ul);
    d.appendChild(h("div", {}, "Next: " + f.next_step));
    box.appendChild(d);
  }
}


// ---- Breakdowns (HTA's analyses, per rank). ----
function stackedBars(name, labels, series, opts) {
  drawChart(name, {
    type: "bar",
    data: { labels, datasets: series.map((s, k) => ({ label: s.label, data: s.data, backgroundColor: s.color || PALETTE[k % PALETTE.length] })) },
    options: { indexAxis: "y", maintainAspectRatio: false, responsive: true,
               scales: { x: { stacked: true, max: opts && opts.max, title: { display: true, text: (opts && opts.unit) || "%" } },
                         y: { stacked: true } },
               plugins: { legend: { position: "bottom" } } },
  });
}

function drawBreakdowns() {
  const temporal = rows("temporal_breakdown").filter((r) => typeof r["Compute (%)"] === "number");
  if (!temporal.length) {
    hideUnless("breakdown-section", false, "no device events: no breakdown");
  } else {
    stackedBars("temporal", temporal.map((r) => `rank ${r.Rank}`), [
      { label: "compute", data: temporal.map((r) => num(r["Compute (%)"])), color: TYPE_COLORS.computation },
      { label: "non-compute", data: temporal.map((r) => num(r["Non-compute (%)"])), color: TYPE_COLORS.memory },
      { label: "idle", data: temporal.map((r) => num(r["Idle (%)"])), color: "#d3d7de" }], { max: 100 });
    const idle = rows("idle_time_breakdown").filter((r) => typeof r["Host wait (%)"] === "number");
    stackedBars("idle", idle.map((r) => `rank ${r.Rank} stream ${r.Stream}`), [
      { label: "host wait", data: idle.map((r) => num(r["Host wait (%)"])), color: KIND_COLORS.cuda_runtime },
      { label: "kernel wait", data: idle.map((r) => num(r["Kernel wait (%)"])), color: TYPE_COLORS.computation },
      { label: "other", data: idle.map((r) => num(r["Other (%)"])), color: "#bab0ac" }], { max: 100 });
    const types = rows("kernel_type_breakdown").filter((r) => r.Rank !== "all");
    const ranks = [...new Set(types.map((r) => String(r.Rank)))];
    const combos = [...new Set(types.map((r) => r.Types))];
    stackedBars("kernel_types", ranks.map((r) => `rank ${r}`), combos.map((c, k) => ({
      label: c, color: TYPE_COLORS[c] || PALETTE[(k + 4) % PALETTE.length],
      data: ranks.map((r) => { const x = types.find((t) => String(t.Rank) === r && t.Types === c); return x ? num(x["Share (%)"]) : null; }),
    })), { max: 100 });
    const overlap = rows("comm_comp_overlap").filter((r) => typeof r["Overlap (%)"] === "number" && r["Communication (ns)"] > 0);
    if (overlap.length && overlap.every((r) => r["Overlap (%)"] === 0)) {
      const c = document.querySelector('canvas[data-chart="overlap"]');
      c.parentNode.replaceWith(h("div", { class: "muted" }, "None of the communication is hidden under computation, on any " +
        `rank (${overlap.map((r) => `rank ${r.Rank}: ${fmtNs(r["Communication (ns)"])} of communication`).join(", ")}).`));
    } else if (overlap.length) {
      stackedBars("overlap", overlap.map((r) => `rank ${r.Rank}`), [
        { label: "communication overlapped by computation", data: overlap.map((r) => num(r["Overlap (%)"])), color: TYPE_COLORS.communication }], { max: 100 });
    } else {
      const c = document.querySelector('canvas[data-chart="overlap"]');
      c.parentNode.replaceWith(h("div", { class: "muted" }, "No communication kernels: nothing to overlap."));
    }
  }
  const path = T ? T.critical_path : null;
  if (path && path.length_ns > 0) {
    const causes = Object.keys(path.by_cause);
    stackedBars("path_causes", [path.step], causes.map((c, k) => ({
      label: c, data: [path.by_cause[c] / path.length_ns * 100], color: PALETTE[k] })), { max: 100 });
  } else {
    hideUnless("path-box", false, "no critical path in this document");
  }
}

// ---- Stragglers (a job): rank x collective lateness on the aligned clock. ----
// Blue: ahead of the median rank; red: behind it; the rank the straggler finding names
// marked. Drawn on a canvas (a heat map: one cell per rank and collective).
function drawStragglers() {
  const A = T && T.straggler_arrivals;
  if (!IS_JOB || !rows("straggler_ranks").length) {
    hideUnless("straggler-section", false, IS_JOB ? "no straggler report" : "one trace: no ranks to compare");
    return;
  }
  const finding = D.findings.find((f) => f.rule === "straggler");
  $("straggler-note").textContent = finding ? finding.title : ((REPORTS.stragglers && REPORTS.stragglers.notes) || []).join(" ");
  if (!A) {
    hideUnless("heatmap-wrap", false, "no collective matched across the ranks: no arrivals to compare");
    return;
  }
  const named = finding ? Number((/rank (\d+)/.exec(finding.title) || [])[1]) : NaN;
  const R = A.ranks.length, C = A.collectives.length, labelW = 70;
  const cell = Math.max(2, Math.min(14, Math.floor((($("heatmap-wrap").clientWidth || 1180) - labelW - 10) / C)));
  const rowH = Math.max(3, Math.min(14, Math.floor(560 / R)));
  const canvas = $("heatmap");
  const ctx = sizeCanvas(canvas, labelW + C * cell + 10, R * rowH + 24);
  let max = 1;
  for (const col of A.behind_ns) for (const v of col) if (v !== null) max = Math.max(max, Math.abs(v));
  let marks = 0;
  ctx.font = "10px system-ui, sans-serif";
  A.ranks.forEach((rank, r) => {
    ctx.fillStyle = rank === named ? PATH_COLOR : "#38404d";
    if (rowH >= 9 || rank === named || r % Math.ceil(10 / rowH) === 0) ctx.fillText(`rank ${rank}`, 2, r * rowH + rowH - 1);
    for (let c = 0; c < C; ++c) {
      const v = A.behind_ns[c][r];
      if (v === null) continue;
      const f = Math.min(1, Math.abs(v) / max), shade = Math.round(255 * (1 - f));
      ctx.fillStyle = v >= 0 ? `rgb(255,${shade},${shade})` : `rgb(${shade},${shade},255)`;
      ctx.fillRect(labelW + c * cell, r * rowH, Math.max(cell - 1, 1), Math.max(rowH - 1, 1));
      ++marks;
    }
    if (rank === named) {
      ctx.strokeStyle = PATH_COLOR;
      ctx.lineWidth = 1.5;
      ctx.strokeRect(labelW - 1, r * rowH - 0.5, C * cell + 1, rowH);
    }
  });
  ctx.fillStyle = "#38404d";
  ctx.fillText("matched collectives, in order →", labelW, R * rowH + 16);
  canvas.setAttribute("data-marks", String(marks));
  canvas.setAttribute("data-drawn", "1");
  $("heatmap-note").textContent = `Each cell: the rank's arrival at the collective minus the median rank's, on the ` +
    `aligned clock; white 0, deepest red ${fmtNs(max)} behind, deepest blue ${fmtNs(max)} ahead. ` +
    (A.shown < A.matched ? `The ${A.shown} collectives of widest spread of ${A.matched} matched.` : `${A.matched} matched collectives.`);
  canvas.onmousemove = (ev) => {
    const b = canvas.getBoundingClientRect();
    const c = Math.floor((ev.clientX - b.left - labelW) / cell), r = Math.floor((ev.clientY - b.top) / rowH);
    const tip = $("tip");
    if (c < 0 || c >= C || r < 0 || r >= R || A.behind_ns[c][r] === null) { tip.style.display = "none"; return; }
    const col = A.collectives[c];
    tip.textContent = `rank ${A.ranks[r]} at ${col.name} (step ${col.iteration}, #${col.index}): ` +
      `${fmtNs(A.behind_ns[c][r])} after the median rank`;
    tip.style.display = "block";
    tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - 580) + "px";
    tip.style.top = ev.clientY + 14 + "px";
  };
  canvas.onmouseleave = () => { $("tip").style.display = "none"; };
}

// ---- The operators' roofline. ----
function drawRoofline() {
  const ops = rows("op_roofline").filter((r) => num(r["FLOP/B"]) > 0 && num(r["TFLOP/s"]) > 0);
  const dev = T && T.device;
  if (!ops.length) {
    hideUnless("roofline-section", false, "no operator with FLOPs and bytes from its shapes");
    return;
  }
  const cats = [...new Set(ops.map((r) => r.Category))];
  const maxShare = Math.max(...ops.map((r) => num(r["Time (%)"]) || 0), 1);
  const datasets = cats.map((c, k) => ({
    type: "bubble", label: c, backgroundColor: PALETTE[k % PALETTE.length] + "b0",
    data: ops.filter((r) => r.Category === c).map((r) => ({
      x: r["FLOP/B"], y: r["TFLOP/s"], r: 3 + 14 * Math.sqrt((num(r["Time (%)"]) || 0) / maxShare),
      label: `${r.Name} ${r.Params || ""}: ${fmtNum(r["TFLOP/s"])} TFLOP/s, ${fmtNum(r["Roof (%)"])}% of roof, ` +
             `${fmtNum(r["Time (%)"])}% of device time` + (num(r["Roof (%)"]) > 100 ? " — ABOVE THE ROOF: a wrong peak or shape" : "") })),
  }));
  const xs = ops.map((r) => r["FLOP/B"]);
  const xmin = Math.min(...xs) / 4, xmax = Math.max(...xs) * 4;
  if (dev && dev.memory_tbps > 0) {
    const peaks = ["fp32_vector", "fp32", "tf32", "bf16", "fp16", "fp8", "int8"].filter((k) => dev[k] > 0);
    const top = Math.max(...peaks.map((k) => dev[k]));
    datasets.push({ type: "line", label: `memory ${dev.memory_tbps} TB/s`, borderColor: "#1d2430", pointRadius: 0, borderWidth: 1.5,
                    data: [{ x: xmin, y: dev.memory_tbps * xmin }, { x: top / dev.memory_tbps, y: top }] });
    peaks.forEach((k, n) => datasets.push({
      type: "line", label: `${k} ${dev[k]} TFLOP/s`, borderColor: PALETTE[(n + 3) % PALETTE.length], pointRadius: 0, borderWidth: 1,
      borderDash: [4, 3], data: [{ x: dev[k] / dev.memory_tbps, y: dev[k] }, { x: Math.max(xmax, dev[k] / dev.memory_tbps * 2), y: dev[k] }] }));
    $("roofline-note").textContent = `Roofs: ${dev.name} (${dev.source}). Point size: share of device time.`;
  } else {
    $("roofline-note").textContent = "The device's peaks are not known (no roof drawn): give them with --device-spec.";
  }
  drawChart("roofline", {
    data: { datasets },
    options: { maintainAspectRatio: false, responsive: true,
               scales: { x: { type: "logarithmic", title: { display: true, text: "intensity (FLOP/byte)" } },
                         y: { type: "logarithmic", title: { display: true, text: "achieved TFLOP/s" } } },
               plugins: { tooltip: { callbacks: { label: (c) => c.raw.label || c.dataset.label } } } },
  });
}

