"""The stylesheet and the small script of ``tao ui``, served from ``/static/``.

Kept as files-in-strings so the package needs no data-file configuration, and
outside the HTML so the Content-Security-Policy can allow only ``'self'``
scripts: even a rendering bug could not make injected markup execute.

The script does one thing: while a page is live (a run still running or
waiting), it subscribes to ``data-live`` with an ``EventSource`` (server-sent
events ``update`` carrying JSON ``{version, html, live}``, see :mod:`tao.ui.live`)
and swaps the server-rendered, already escaped HTML in, keeping open
``<details>`` open and never interrupting someone typing a deny reason.
"""

from __future__ import annotations

CSS = """
:root {
  --fg: #1f2328; --muted: #656d76; --faint: #8c959f; --line: #d8dee4; --bg: #f6f8fa;
  --card: #ffffff; --accent: #0969da; --action-bg: #ddf4ff; --action-fg: #0550ae;
  --obs-bg: #f6f8fa; --red: #cf222e; --red-bg: #ffebe9; --green: #1a7f37;
  --green-bg: #dafbe1; --yellow: #9a6700; --yellow-bg: #fff8c5; --magenta: #8250df;
  --magenta-bg: #fbefff; --blue-bg: #ddf4ff;
  --mono: ui-monospace, SFMono-Regular, "DejaVu Sans Mono", Menlo, Consolas, monospace;
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", "Noto Sans", "DejaVu Sans", sans-serif; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
code, pre { font-family: var(--mono); font-size: 13px; }
pre { margin: 0; white-space: pre-wrap; word-break: break-word; }
.top { display: flex; align-items: baseline; gap: 16px; padding: 12px 28px;
  background: #24292f; color: #f0f3f6; }
.top .brand { color: #f0f3f6; font-weight: 600; font-size: 17px; }
.top .logo { font-family: var(--mono); background: #f0f3f6; color: #24292f;
  border-radius: 4px; padding: 0 6px; margin-right: 4px; }
.top .where { color: #9ea7b3; font-family: var(--mono); font-size: 12px; margin-left: auto;
  min-width: 0; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
main { max-width: 1200px; margin: 0 auto; padding: 20px 28px 60px; }
h1 { font-size: 21px; margin: 0 0 8px; font-weight: 600; white-space: pre-wrap; }
h2 { font-size: 14px; text-transform: uppercase; letter-spacing: .06em; color: var(--muted);
  margin: 26px 0 10px; }
.badge { display: inline-block; border-radius: 999px; padding: 1px 10px; font-size: 12px;
  font-weight: 600; border: 1px solid transparent; white-space: nowrap; }
.s-finished { background: var(--green-bg); color: var(--green); }
.s-max_steps, .s-cancelled { background: var(--yellow-bg); color: var(--yellow); }
.s-awaiting_approval { background: var(--magenta-bg); color: var(--magenta);
  border-color: #d8b9ff; }
.s-error, .s-interrupted { background: var(--red-bg); color: var(--red); }
.s-running { background: var(--blue-bg); color: var(--action-fg); }
.table-wrap { max-width: 100%; overflow-x: auto; background: var(--card);
  border: 1px solid var(--line); border-radius: 8px; }
table.runs { width: 100%; border-collapse: collapse; table-layout: fixed; }
.runs th, .runs td { text-align: left; padding: 8px 10px; border-bottom: 1px solid var(--line);
  vertical-align: top; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.runs th { font-size: 12px; color: var(--muted); font-weight: 600; background: #f6f8fa; }
.runs tr:last-child td { border-bottom: 0; }
.runs tr:hover td { background: #f6f8fa; }
.runs .num { text-align: right; font-variant-numeric: tabular-nums; }
.runs .id { font-family: var(--mono); font-size: 13px; }
.runs .c-id { width: 112px; } .runs .c-when { width: 142px; } .runs .c-status { width: 172px; }
.runs td.c-status { text-overflow: clip; }
.runs td.c-status .badge { white-space: normal; max-width: 100%; box-sizing: border-box; }
.runs .c-steps { width: 68px; } .runs .c-tokens { width: 82px; }
.runs .c-duration { width: 88px; } .runs .c-cost { width: 88px; }
.runs .c-model { width: 130px; } .runs .c-task { width: auto; }
.runs td.c-model { color: var(--muted); font-size: 13px; }
.runs td.c-when, .runs td.c-cost, .runs td.c-duration { font-size: 13px; }
.runs td.c-task a { color: var(--fg); display: block; overflow: hidden;
  text-overflow: ellipsis; white-space: nowrap; }
.runs .tag { display: block; overflow: hidden; text-overflow: ellipsis; white-space: nowrap;
  font-size: 12px; color: var(--magenta); }
@media (max-width: 960px) {
  main { padding: 16px 14px 40px; }
  .runs .c-when, .runs .c-steps, .runs .c-tokens { display: none; }
  .runs .c-model { width: 100px; } .runs .c-status { width: 164px; }
}
.filters { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 0 0 12px; }
.filters input, .filters select { font: inherit; font-size: 14px; padding: 4px 10px;
  border: 1px solid var(--line); border-radius: 6px; background: var(--card); min-width: 0;
  max-width: 100%; }
.filters input { flex: 1 1 220px; }
.filters button { background: var(--card); color: var(--accent); }
.filters .clear { font-size: 13px; }
.pager { display: flex; gap: 16px; align-items: center; justify-content: center;
  margin: 12px 0; font-size: 14px; }
.pager .where { color: var(--muted); }
.pager .off { color: var(--faint); }
.empty { color: var(--muted); }
.run-head { background: var(--card); border: 1px solid var(--line); border-radius: 8px;
  padding: 16px 20px; }
.meta { display: flex; flex-wrap: wrap; gap: 6px 18px; align-items: center;
  color: var(--fg); font-size: 13px; }
.meta .k, .label { color: var(--muted); font-size: 12px; }
.cost { color: var(--faint); font-size: 13px; margin-top: 6px; }
.decision { font-size: 13px; margin: 6px 0 0; color: var(--magenta); }
.decision.denied { color: var(--red); }
.steps { margin-top: 14px; }
.step { background: var(--card); border: 1px solid var(--line); border-radius: 8px;
  padding: 12px 18px; margin-bottom: 10px; }
.step.failed { border-color: #ffcecb; border-left: 4px solid var(--red); }
.step-head { font-size: 12px; color: var(--faint); margin-bottom: 4px; }
.step-head .n { font-weight: 600; }
.step-head .kind { color: var(--red); font-weight: 600; }
.step .label { display: inline-block; min-width: 92px; font-weight: 600; }
.thought { color: var(--muted); font-style: italic; margin: 4px 0; white-space: pre-wrap; }
.thought .label { font-style: normal; }
.action { margin: 6px 0; }
.action code, .final code { background: var(--action-bg); color: var(--action-fg);
  padding: 2px 8px; border-radius: 6px; }
.action.bad { color: var(--red); }
.final code { background: var(--green-bg); color: var(--green); font-weight: 600; }
.observation { margin: 8px 0 4px; border: 1px solid var(--line); border-left: 4px solid #54aeff;
  border-radius: 6px; background: var(--obs-bg); padding: 8px 12px; }
.observation .label { display: block; margin-bottom: 2px; }
.observation.bad { border-color: #ffcecb; border-left-color: var(--red);
  background: var(--red-bg); }
.observation.bad pre, .observation.bad .label { color: var(--red); }
.observation pre { max-height: 420px; overflow: auto; }
.costs { color: var(--faint); font-size: 12px; margin-top: 6px; }
details.model-io { margin-top: 6px; font-size: 13px; }
details.model-io summary { cursor: pointer; color: var(--accent); font-size: 12px; }
.msg { border-top: 1px dashed var(--line); padding: 6px 0; }
.msg .role { font-family: var(--mono); font-size: 11px; text-transform: uppercase;
  color: var(--magenta); }
.msg pre { max-height: 300px; overflow: auto; }
.msg.reply .role { color: var(--green); }
.thinking { color: var(--action-fg); font-size: 13px; padding: 6px 2px;
  animation: pulse 1.2s ease-in-out infinite; }
@keyframes pulse { 50% { opacity: .35; } }
.ending { margin-top: 10px; }
.answer { background: var(--green-bg); border: 1px solid #aceebb; border-radius: 8px;
  padding: 10px 16px; }
.answer .label { color: var(--green); font-weight: 600; display: block; }
.answer pre { font-size: 15px; }
.error { color: var(--red); background: var(--red-bg); border-radius: 8px; padding: 10px 16px; }
.budget { color: var(--yellow); }
.note { background: var(--yellow-bg); border: 1px solid #eed888; border-radius: 8px;
  padding: 8px 14px; white-space: pre-wrap; }
.approval { background: var(--card); border: 1px solid #d8b9ff; border-left: 4px solid
  var(--magenta); border-radius: 8px; padding: 12px 18px; margin: 12px 0; }
.approval-head { margin-bottom: 8px; }
.approval-head .label { color: var(--magenta); font-weight: 600; font-size: 13px;
  margin-right: 10px; }
.approval-task { font-weight: 600; }
.call { margin: 6px 0; display: flex; gap: 10px; align-items: baseline; flex-wrap: wrap; }
.call .effects { font-size: 11px; font-weight: 700; text-transform: uppercase;
  color: var(--red); background: var(--red-bg); border-radius: 4px; padding: 1px 6px; }
.call .action { background: var(--action-bg); color: var(--action-fg); padding: 2px 8px;
  border-radius: 6px; }
.preview { background: var(--obs-bg); border: 1px solid var(--line); border-radius: 6px;
  padding: 8px 12px; max-height: 300px; overflow: auto; }
pre.diff .d-add { color: var(--green); background: var(--green-bg); }
pre.diff .d-del { color: var(--red); background: var(--red-bg); }
pre.diff .d-hunk { color: var(--magenta); font-weight: 600; }
pre.diff .d-file { color: var(--muted); font-weight: 600; }
.eval-tag { margin-top: 6px; }
.eval-tag .gold b { color: var(--green); }
details.reply { font-size: 13px; margin: 6px 0; }
details.reply summary { cursor: pointer; color: var(--accent); font-size: 12px; }
details.reply pre { color: var(--muted); padding: 6px 0 0; }
.decided { font-size: 13px; color: var(--yellow); margin: 6px 0; }
p.interrupted { font-size: 13px; color: var(--red); font-weight: 600; margin: 6px 0; }
.buttons { display: flex; gap: 12px; flex-wrap: wrap; margin-top: 10px; align-items: center; }
.buttons form { display: flex; gap: 8px; margin: 0; }
button { font: inherit; font-weight: 600; border-radius: 6px; padding: 5px 16px;
  cursor: pointer; border: 1px solid rgba(31,35,40,.15); }
button.approve { background: #1f883d; color: #fff; }
button.approve:hover { background: #1a7f37; }
button.deny { background: #f6f8fa; color: var(--red); }
button.deny:hover { background: var(--red); color: #fff; }
button:disabled { opacity: .5; cursor: wait; }
.deny-form input { font: inherit; font-size: 13px; padding: 4px 10px; width: 260px;
  border: 1px solid var(--line); border-radius: 6px; }
.notice { background: var(--card); border: 1px solid var(--line); border-radius: 8px;
  padding: 16px 20px; }
"""

JS = """
"use strict";
(function () {
  // One click per decision: a double click must not post twice.
  document.addEventListener("submit", function (event) {
    const button = event.target.querySelector("button");
    if (button) { setTimeout(function () { button.disabled = true; }, 0); }
  });
  // A filter of the run list applies as soon as it is chosen.
  document.addEventListener("change", function (event) {
    const el = event.target;
    if (el.tagName === "SELECT" && el.form && el.form.classList.contains("filters")) {
      el.form.requestSubmit();
    }
  });
  const live = document.getElementById("live");
  if (!live || !live.dataset.live || !window.EventSource) { return; }
  let version = live.dataset.version || "";
  let waiting = null;  // an update held back while someone types
  function typing() {
    const el = document.activeElement;
    return el && el.tagName === "INPUT" && live.contains(el) && el.value !== "";
  }
  function apply(data) {
    if (data.version === version) { return; }
    if (typing()) { waiting = data; return; }
    waiting = null;
    const open = new Set(Array.from(live.querySelectorAll("details[open]"),
                                    function (d) { return d.dataset.key; }));
    live.innerHTML = data.html;  // rendered and escaped by the server
    live.querySelectorAll("details").forEach(function (d) {
      if (open.has(d.dataset.key)) { d.open = true; }
    });
    version = data.version;
    document.dispatchEvent(new CustomEvent("tao:updated"));
  }
  setInterval(function () { if (waiting) { apply(waiting); } }, 1000);
  const url = live.dataset.live;
  const source = new EventSource(url + (url.indexOf("?") < 0 ? "?" : "&") + "v=" +
                                 encodeURIComponent(version));
  source.addEventListener("update", function (event) {
    const data = JSON.parse(event.data);
    apply(data);
    if (!data.live) { source.close(); }
  });
  source.addEventListener("end", function () { source.close(); });
})();
"""
