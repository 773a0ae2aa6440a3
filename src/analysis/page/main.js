// Draws every part of the page that applies, each apart (one failing does not stop the
// others: its error is shown), then marks the page drawn for its tests.
// What the document is: a trace's or a job's analysis, a diff, or a what-if.
const KIND = D.name === "whatif" ? "whatif" : D.base && D.new ? "diff" : IS_JOB ? "job" : "trace";
document.body.setAttribute("data-kind", KIND);
const DRAW = KIND === "whatif" ? [drawWhatif, drawTables]
  : KIND === "diff" ? [drawDiff, drawTables]
  : [drawHeader, drawFindings, drawTimelineSection, drawBreakdowns, drawStragglers, drawRoofline,
     () => hideUnless("compare-section", false, "one run: nothing to compare"), drawTables];
for (const draw of DRAW) {
  try { draw(); } catch (e) { reportError(`${draw.name}: ${e && e.stack ? e.stack : e}`); }
}
document.body.setAttribute("data-charts", String(Object.keys(charts).length));
document.body.setAttribute("data-draw-ms", (performance.now() - started).toFixed(0));
// What the page fetched: nothing, by design (a test reads this).
document.body.setAttribute("data-resources", String(performance.getEntriesByType("resource").length));
document.body.setAttribute("data-ready", "1");
