// The page of `diff` (two traces or two jobs, side by side, the differences ranked by the
// time they explain) and of `whatif` (each step's predicted time against today's).

function barChart(name, labels, series, opts) {
  drawChart(name, {
    type: "bar",
    data: { labels, datasets: series.map((s, k) => ({ label: s.label, data: s.data, backgroundColor: s.color || PALETTE[k % PALETTE.length] })) },
    options: { indexAxis: (opts && opts.axis) || "y", maintainAspectRatio: false, responsive: true,
               scales: { x: { stacked: !!(opts && opts.stacked), title: { display: true, text: (opts && opts.unit) || "" } },
                         y: { stacked: !!(opts && opts.stacked), ticks: { autoSkip: false } } },
               plugins: { legend: { position: "bottom" },
                          tooltip: { callbacks: { title: (c) => (opts && opts.titles ? opts.titles[c[0].dataIndex] : c[0].label) } } } },
  });
}
// Base against new for each row, in ms, from two ns columns; `label` names a row's bar.
function baseNewBars(name, list, label, baseCol, newCol, full) {
  barChart(name, list.map((r) => short(label(r), 60)), [
    { label: "base (ms)", data: list.map((r) => num(r[baseCol]) / 1e6) },
    { label: "new (ms)", data: list.map((r) => num(r[newCol]) / 1e6) }], { unit: "ms", titles: list.map(full || label) });
}
function short(name, n) { return name.length > n ? name.slice(0, n - 1) + "…" : name; }
function sideBox(title, lines) {
  const d = h("div");
  d.appendChild(h("h3", {}, title));
  for (const l of lines) d.appendChild(h("div", { class: "muted" }, l));
  return d;
}
function dropChart(name, why) {
  const c = document.querySelector(`canvas[data-chart="${name}"]`);
  if (c) c.parentNode.replaceWith(h("div", { class: "muted" }, why));
}
function hideAll(ids, why) { for (const id of ids) hideUnless(id, false, why); }
const ANALYSIS_SECTIONS = ["timeline-section", "breakdown-section", "straggler-section", "roofline-section"];

function drawDiff() {
  hideAll(ANALYSIS_SECTIONS, "a diff: the two runs are compared below");
  const job = !!REPORTS.job_diff_ranks;
  const side = (d) => job
    ? [`${d.ranks ? d.ranks.length : "?"} ranks`, d.alignment || ""]
    : [d.source, `${d.format} · ${d.runtime} · ${d.device || "device not named"} · ${fmtNum(d.events)} events`];
  $("title").textContent = "tierscope diff: base → new";
  $("subtitle").textContent = job ? "two jobs, rank by rank" : `${D.base.source} → ${D.new.source}`;
  $("compare-sides").appendChild(sideBox("Base", side(D.base)));
  $("compare-sides").appendChild(sideBox("New", side(D.new)));
  // The verdict: the measured change of a step and how much of it the differences explain.
  const SUMMARY_ROWS = ["all of the above together", "unexplained", "measured change of a step"];
  const row = (name) => rows("diff_explained").find((r) => r.Difference === name);
  const measured = row("measured change of a step"), together = row("all of the above together");
  const v = $("verdict");
  const share = together ? num(together["Of measured (%)"]) : NaN;
  // Re-timed together, the differences can predict more than the change, or the other way.
  const beyond = Number.isFinite(share) && (share > 100 || share < 0);
  v.className = "verdict " + (beyond ? "marked" : "pass");
  v.textContent = job ? "Two jobs compared rank by rank."
    : measured && together
      ? `A step changed by ${fmtNs(measured["Predicted change (ns)"])} (new - base); the differences below, re-timed on the ` +
        `baseline, predict ${fmtNs(together["Predicted change (ns)"])} (${fmtNum(share)}% of it)` +
        (beyond ? ": more than the change itself, or against it — other changes offset them (the unexplained row), so " +
                  "read each difference's share as an upper bound, not as its part of the change." : ".")
      : (D.headline || []).join("; ");
  for (const l of D.headline || []) $("compare-headline").appendChild(h("li", {}, l));
  // Findings: the job's, base then new; a trace diff has none of its own.
  const box = $("findings");
  const findings = D.findings && !Array.isArray(D.findings) ? [["base", D.findings.base || []], ["new", D.findings.new || []]] : [];
  if (!findings.length) box.appendChild(h("div", { class: "muted" }, "A diff of two traces: its differences are below, ranked by the time they explain."));
  for (const [which, list] of findings) {
    for (const f of list) {
      const d = h("div", { class: "finding", "data-rule": f.rule });
      d.appendChild(h("div", { class: "t" }, `${which}: ${f.title}`));
      d.appendChild(h("div", { class: "x" }, `explains ${fmtNs(f.explained_ns)} · next: ${f.next_step}`));
      box.appendChild(d);
    }
  }
  if (job) {
    const ranks = rows("job_diff_ranks");
    $("compare-a-title").textContent = "Device span per rank";
    baseNewBars("compare_a", ranks, (r) => `rank ${r.Rank}`, "Span base (ns)", "Span new (ns)");
    const types = rows("job_diff_kernel_types");
    $("compare-b-title").textContent = "Device time by kernel type";
    baseNewBars("compare_b", types, (r) => r.Type, "Base (ns)", "New (ns)");
    const kernels = rows("job_diff_kernels").slice(0, 15);
    $("compare-c-title").textContent = "The kernels that changed most (all ranks)";
    if (kernels.length) {
      baseNewBars("compare_c", kernels, (r) => r.Name, "Base (ns)", "New (ns)");
    } else dropChart("compare_c", "No kernel changed.");
    return;
  }
  // The differences, ranked by the time they explain.
  const explained = rows("diff_explained")
    .filter((r) => typeof r["Predicted change (ns)"] === "number" && r["Predicted change (ns)"] !== 0 && !SUMMARY_ROWS.includes(r.Difference))
    .sort((a, b) => Math.abs(b["Predicted change (ns)"]) - Math.abs(a["Predicted change (ns)"])).slice(0, 15)
    .concat(SUMMARY_ROWS.map(row).filter((r) => r));
  $("compare-a-title").textContent = "Differences, by the time they explain (predicted change)";
  if (explained.length) {
    barChart("compare_a", explained.map((r) => short(r.Difference, 48)), [
      { label: "predicted change (ms)", data: explained.map((r) => r["Predicted change (ns)"] / 1e6), color: TYPE_COLORS.communication }],
      { unit: "ms (new - base)", titles: explained.map((r) => r.Difference) });
  } else dropChart("compare_a", "No difference explains any time.");
  const summary = rows("diff_summary").filter((r) => typeof r["New/Base"] === "number");
  $("compare-b-title").textContent = "New / base, per metric (1: unchanged)";
  if (summary.length) {
    barChart("compare_b", summary.map((r) => r.Metric), [{ label: "new / base", data: summary.map((r) => r["New/Base"]) }], { unit: "ratio" });
  } else dropChart("compare_b", "No metric to compare.");
  const kernels = rows("diff_kernels").slice(0, 15);
  $("compare-c-title").textContent = "Kernels, base and new (device time)";
  if (kernels.length) {
    baseNewBars("compare_c", kernels, (r) => r.Kernel, "Base time", "New time");
  } else dropChart("compare_c", "Neither trace has kernels.");
}

function drawWhatif() {
  hideAll(ANALYSIS_SECTIONS, "a what-if: the prediction is below");
  $("title").textContent = "tierscope whatif";
  $("subtitle").textContent = D.title;
  const steps = D.rows.filter((r) => typeof r["Predicted (ns)"] === "number");
  const v = $("verdict");
  // The tool's own check of the replay (its notes), not a threshold of the page's.
  const poor = (D.notes || []).find((n) => /replay more than .* away from their measured span/.test(n));
  const worst = Math.max(0, ...steps.map((r) => Math.abs(num(r["Replay error (%)"])) || 0));
  v.className = "verdict " + (poor || !steps.length ? "marked" : "pass");
  v.textContent = !steps.length ? "No step to predict: " + (D.notes || []).join(" ")
    : poor ? poor
    : `Today's steps replay within ${fmtNum(worst)}% of what the trace measured: the prediction rests on a graph that reproduces them.`;
  if (!steps.length) {
    hideUnless("compare-section", false, "no step to predict");
    return;
  }
  $("findings").appendChild(h("div", { class: "muted" }, (D.notes || []).join(" ")));
  $("compare-sides").appendChild(sideBox("Today", [`${steps.length} steps, ${fmtNs(steps.reduce((a, r) => a + r["Measured (ns)"], 0))} measured`]));
  $("compare-sides").appendChild(sideBox("Predicted", [`${fmtNs(steps.reduce((a, r) => a + r["Predicted (ns)"], 0))} after the change`]));
  $("compare-title").textContent = "Predicted against today's";
  $("compare-a-title").textContent = "Each step: measured, replayed, predicted";
  barChart("compare_a", steps.map((r) => r.Step), [
    { label: "measured (ms)", data: steps.map((r) => r["Measured (ns)"] / 1e6), color: "#9c9c9c" },
    { label: "replayed (ms)", data: steps.map((r) => r["Replayed (ns)"] / 1e6), color: "#bab0ac" },
    { label: "predicted (ms)", data: steps.map((r) => r["Predicted (ns)"] / 1e6), color: TYPE_COLORS.computation }], { unit: "ms" });
  $("compare-b-title").textContent = "The predicted critical path, by cause";
  const causes = ["CPU (%)", "GPU compute (%)", "GPU comm (%)", "Launch (%)", "Kernel gaps (%)"];
  barChart("compare_b", steps.map((r) => r.Step), causes.map((c, k) => ({ label: c, data: steps.map((r) => num(r[c])), color: PALETTE[k] })),
           { unit: "%", stacked: true });
  $("compare-c-title").textContent = "Factor: predicted / replayed";
  barChart("compare_c", steps.map((r) => r.Step), [{ label: "factor", data: steps.map((r) => num(r.Factor)), color: TYPE_COLORS.memory }],
           { unit: "predicted / replayed" });
}
