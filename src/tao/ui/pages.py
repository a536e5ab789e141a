"""HTML of ``tao ui``: one run's steps, pending approvals (SPEC M3, S3); the run list
is :mod:`tao.ui.listing`.

Every piece of text that came from a run (task, thought, argument, observation,
model input, error) goes through :func:`html.escape` here, in :mod:`tao.ui.listing`
and in :mod:`tao.ui.diff`, and nowhere else is HTML built, so a tool output
holding ``<script>`` shows as text. The page looks
like ``tao runs show``: thought quiet, action highlighted, observation boxed,
errors red. Styles and script are served from ``/static/`` (see
:mod:`tao.ui.assets`), so the Content-Security-Policy can forbid inline script.
"""

from __future__ import annotations

import hashlib
import json
from html import escape
from typing import TYPE_CHECKING
from urllib.parse import quote

from tao.format import (
    ERROR_KINDS,
    KIND_NOTES,
    format_action,
    format_call,
    format_time,
    labels_for,
    run_costs,
    status_word,
    step_costs,
    terminal_safe,
)
from tao.protocol.labels import Labels
from tao.redact.marker import hidden_note
from tao.redact.scan import redact
from tao.state.config import Approval, EvalTag, RunConfig
from tao.state.result import RunResult, Status, Step, StepKind
from tao.ui.diff import text_block

if TYPE_CHECKING:  # rendered here, read from the run log by the callers
    from tao.store.query import RunSummary
    from tao.ui.approval import Pending, ShownCall

#: Statuses whose page keeps listening for news.
LIVE_STATUSES = frozenset({Status.RUNNING, Status.AWAITING_APPROVAL})


def e(text: object) -> str:
    """Escape anything for HTML text and attribute values (quotes included), with control,
    bidi and invisible-direction characters shown as escapes (``\\u202e``), as on the
    terminal: a bidi override in a thought would otherwise reorder what the page shows (S9)."""
    return escape(terminal_safe(str(text)), quote=True)


def run_url(run_id: str, suffix: str = "") -> str:
    return f"/runs/{quote(run_id, safe='')}{suffix}"


def badge(status: str) -> str:
    """The status word in its colour (CSS class ``s-STATUS``)."""
    return f'<span class="badge s-{e(status)}">{e(status_word(status))}</span>'


def version_of(body: str) -> str:
    """A short fingerprint of a rendered body: the live script swaps it in when it changes."""
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def layout(title: str, body: str, *, csrf: str, where: str, live_url: str | None) -> str:
    """A whole page; ``live_url`` (server-sent events) makes :mod:`tao.ui.assets`' script
    swap in each new rendering of the body."""
    live = f' data-live="{e(live_url)}" data-version="{version_of(body)}"' if live_url else ""
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf-token" content="{e(csrf)}">
<title>{e(title)} · tao</title>
<link rel="stylesheet" href="/static/app.css">
<script src="/static/app.js" defer></script>
</head>
<body>
<header class="top">
  <a class="brand" href="/"><span class="logo">tao</span> runs</a>
  <span class="where" title="run log">{e(where)}</span>
</header>
<main id="live"{live}>
{body}
</main>
</body>
</html>
"""


# -- what every view shows of a run ----------------------------------------------------


def cost_usd(run: object) -> float | None:
    """The run's money cost in US dollars, if the run log knows it: ``cost_usd`` of the
    summary or of its usage; absent, ``None`` or not a number reads as unknown."""
    for source in (run, getattr(run, "usage", None)):
        value = getattr(source, "cost_usd", None)
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            return float(value)
    return None


def cost_text(run: object) -> str:
    """``$0.0123``, or ``unknown`` when the run log has no cost for the run (never a guessed 0)."""
    cost = cost_usd(run)
    return "unknown" if cost is None else f"${cost:.4f}"


def eval_words(tag: EvalTag) -> str:
    """``hotpotqa question 5a8b…, gold answer: yes (react)``: an eval run's tag in words."""
    strategy = f" ({tag.strategy})" if tag.strategy else ""
    return f"{tag.benchmark} question {tag.question_id}, gold answer: {tag.gold}{strategy}"


def _eval_head(config: RunConfig | None) -> str:
    tag = config.eval_tag if config is not None else None
    if tag is None:
        return ""
    strategy = (
        f' <span><span class="k">strategy</span> {e(tag.strategy)}</span>' if tag.strategy else ""
    )
    return (
        f'<div class="meta eval-tag"><span><span class="k">benchmark</span> {e(tag.benchmark)}'
        f'</span> <span><span class="k">question</span> <code>{e(tag.question_id)}</code></span>'
        f' <span class="gold"><span class="k">gold answer</span> <b>{e(tag.gold)}</b></span>'
        f"{strategy}</div>"
    )


# -- approvals ----------------------------------------------------------------------------


def approval_card(item: Pending, *, csrf: str, link: bool = False) -> str:
    """The calls a run waits on, with Approve and Deny (with a reason) buttons.

    The forms name each call shown (``call`` = :attr:`PendingCall.id`): a form fetched for
    one call can never decide another one the run reached since (SPEC S7).
    """
    title = f'<a href="{e(run_url(item.run_id))}">{e(item.task)}</a>' if link else e(item.task)
    calls = "\n".join(
        f'<div class="call" data-call="{e(call.id)}"><span class="effects">'
        f"{e(_effects(call.effects))}</span>"
        f'<code class="action">{e(format_call(call.tool, None, call.arguments))}</code></div>'
        + _origin(call)
        + (f'<p class="interrupted">{e(call.warning)}</p>' if call.warning else "")
        + (text_block(call.preview, "preview") if call.preview else "")
        + (f'<p class="hidden-note">{e(hidden_note(call.hidden))}</p>' if call.hidden else "")
        for call in item.calls
    )
    thought = (
        f'<p class="thought"><span class="label">Thought</span> {e(item.thought)}</p>'
        if item.thought
        else ""
    )
    reply = (
        f'<details class="reply" data-key="reply-{e(item.run_id)}"><summary>What the model '
        f"wrote</summary><pre>{e(item.reply)}</pre></details>"
        if item.reply
        else ""
    )
    if item.decided:
        reply += (
            f'<p class="decided">Already {e(item.decided)}; it continues with '
            f"<code>tao resume {e(item.run_id)}</code>, or decide again here to resume it "
            "now.</p>"
        )
        reply += "".join(approval_note(record) for record in item.records)
    hidden = f'<input type="hidden" name="csrf" value="{e(csrf)}">' + "".join(
        f'<input type="hidden" name="call" value="{e(call.id)}">' for call in item.calls
    )
    return f"""<div class="approval" data-run="{e(item.run_id)}">
  <div class="approval-head"><span class="label">Approval needed</span>
    <span class="approval-task">{title}</span></div>
  {thought}
  {calls}
  {reply}
  <div class="buttons">
    <form method="post" action="{e(run_url(item.run_id, "/approve"))}">{hidden}
      <button type="submit" class="approve">Approve</button></form>
    <form method="post" action="{e(run_url(item.run_id, "/deny"))}" class="deny-form">{hidden}
      <input type="text" name="reason" maxlength="2000" placeholder="Reason (optional)"
             aria-label="Reason for denying">
      <button type="submit" class="deny">Deny</button></form>
  </div>
</div>"""


def _effects(effects: tuple[str, ...]) -> str:
    return ", ".join(effects) or "side effects"


# -- one run -----------------------------------------------------------------------------


def run_body(
    summary: RunSummary,
    result: RunResult,
    pending: Pending | None,
    *,
    csrf: str,
    note: str | None = None,
) -> str:
    """Header, the pending call (if any), every step, and how the run ended."""
    labels = labels_for(result.lang)
    cost = run_costs(result, summary.status, summary.duration_s)  # its cost said once
    parts = [
        f"""<section class="run-head" data-status="{e(summary.status)}">
  <h1>{e(result.task)}</h1>
  <div class="meta">{badge(summary.status)}
    <span><span class="k">run</span> <code>{e(result.run_id)}</code></span>
    <span><span class="k">model</span> {e(result.model)}</span>
    <span><span class="k">lang</span> {e(result.lang)}</span>
    <span><span class="k">started</span> {e(format_time(result.started_at))}</span>
    {_parent(result.parent_id, result.parent_step)}</div>
  {_eval_head(result.config)}
  <div class="cost">{e(cost)}</div>
</section>"""
    ]
    if note:
        parts.append(f'<p class="note">{e(note)}</p>')
    if pending is not None:
        parts.append(approval_card(pending, csrf=csrf))
    parts.append('<section class="steps">')
    parts.extend(step_html(step, labels) for step in result.steps)
    if summary.status == "running":
        parts.append('<div class="thinking">running…</div>')
    parts.append("</section>")
    parts.append(_ending(summary, result, labels))
    return "\n".join(parts)


def _parent(parent_id: str | None, step: int | None) -> str:
    """A follow-up links to the run whose conversation it continues (``tao run --continue``),
    a child run (``Agent.as_tool``) to the run and step whose call started it."""
    if parent_id is None:
        return ""
    link = f'<a href="{e(run_url(parent_id))}"><code>{e(parent_id)}</code></a>'
    if step is not None:
        return f'<span class="parent"><span class="k">child of</span> {link}, step {step}</span>'
    return f'<span class="parent"><span class="k">continues</span> {link}</span>'


def _origin(call: ShownCall) -> str:
    """A call that waits in a child run names it, linked (issue 31)."""
    if call.child_run is None or call.origin is None:
        return ""
    return (
        f'<p class="origin">{e(call.origin)} '
        f'(<a href="{e(run_url(call.child_run))}">open the child run</a>)</p>'
    )


def approval_note(approval: Approval) -> str:
    """Who decided on a step's call, when, from where, and why (issue 30)."""
    kind = "approved" if approval.approved else "denied"
    return f'<p class="decision {kind}">{e(redact(approval.describe()))}</p>'


def _ending(summary: RunSummary, result: RunResult, labels: Labels) -> str:
    parts = ['<section class="ending">']
    if result.answer is not None and summary.status not in LIVE_STATUSES:
        parts.append(
            f'<div class="answer"><span class="label">{e(labels.answer)}</span>'
            f"<pre>{e(result.answer)}</pre></div>"
        )
    if result.stop_reason:
        parts.append(f'<p class="budget">budget spent: {e(result.stop_reason)}</p>')
    if result.error and summary.status != "running":
        parts.append(f'<p class="error"><b>Error:</b> {e(result.error)}</p>')
    parts.append("</section>")
    return "\n".join(parts)


def step_html(step: Step, labels: Labels) -> str:
    """One Thought → Action → Observation round, like a step of ``tao runs show``."""
    failed = step.kind in ERROR_KINDS
    note = KIND_NOTES.get(step.kind)
    head = f'<span class="n">#{step.index}</span>' + (
        f' <span class="kind">{e(note)}</span>' if note else ""
    )
    parts = [f'<article class="step{" failed" if failed else ""}" id="step-{step.index}">',
             f'<div class="step-head">{head}</div>']  # fmt: skip
    parts += [f'<p class="compaction">{e(c.describe())}</p>' for c in step.compactions]
    parts += [f'<p class="kind">model failed: {e(failure)}</p>' for failure in step.model_failures]
    if step.model is not None:  # a fallback model answered this step
        parts.append(f'<p class="kind">answered by {e(step.model)}</p>')
    if step.thought:
        parts.append(
            f'<p class="thought"><span class="label">{e(labels.thought)}</span> '
            f"{e(step.thought)}</p>"
        )
    if step.kind is StepKind.FINAL:
        parts.append(
            f'<p class="final"><span class="label">{e(labels.answer)}</span> '
            f"<code>{e(step.answer or '')}</code></p>"
        )
    elif step.tool is not None:
        rest = format_action(step)[len(step.tool) :]
        parts.append(
            f'<p class="action"><span class="label">{e(labels.action)}</span> '
            f"<code><b>{e(step.tool)}</b>{e(rest)}</code></p>"
        )
    elif step.kind is StepKind.PARSE_ERROR:
        parts.append(f'<p class="action bad"><span class="label">{e(labels.action)}</span> –</p>')
    if step.observation is not None and step.kind is not StepKind.FINAL:
        bad = failed or step.observation.startswith("Error")
        parts.append(
            f'<div class="observation{" bad" if bad else ""}">'
            f'<span class="label">{e(labels.observation)}</span>'
            f"{text_block(step.observation)}</div>"
        )
    if step.approval is not None:
        parts.append(approval_note(step.approval))
    if step.child_run is not None:  # an agent used as a tool: its own run, one click away
        child = e(run_url(step.child_run))
        parts.append(f'<p class="child">child run <a href="{child}">{e(step.child_run)}</a></p>')
    parts.append(f'<div class="costs">{e(step_costs(step))}</div>')
    parts.append(_model_io(step))
    parts.append("</article>")
    return "\n".join(parts)


def _model_io(step: Step) -> str:
    """What the model saw and said, folded away until asked for."""
    count = len(step.model_input)
    messages = "\n".join(
        f'<div class="msg"><span class="role">{e(m.get("role", "?"))}</span>'
        f"<pre>{e(_content(m.get('content')))}</pre></div>"
        for m in step.model_input
    )
    return (
        f'<details class="model-io" data-key="io-{step.index}">'
        f"<summary>Model input ({count} message{'' if count == 1 else 's'}) and reply</summary>"
        f'{messages}<div class="msg reply"><span class="role">reply</span>'
        f"<pre>{e(step.model_output)}</pre></div></details>"
    )


def _content(content: object) -> str:
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False, indent=2)


def message_page(title: str, message: str, *, back: str) -> str:
    """The body of a small error or notice page."""
    return (
        f'<section class="notice"><h1>{e(title)}</h1><p>{e(message)}</p>'
        f'<p><a href="{e(back)}">Back</a></p></section>'
    )
