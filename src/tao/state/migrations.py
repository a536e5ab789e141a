"""Every upgrade of stored JSON, in one place: what an older tao wrote, read by this one.

A record with a schema version (the checkpoint) has one upgrade per older version, each
taking the JSON of version ``n`` to version ``n + 1``; :func:`tao.state.codec.decode`
applies them in turn. A record without one only ever gains keys: :data:`MISSING` says
what an absent key reads as where that is not the field's default. An upgrade describes
the past, so it keeps the formulas of its time (a call id, below) rather than calling
today's code.

Checkpoint versions: 0 (tao 0.1: decisions by position, ``elapsed``, pending calls
without a step), 1 (ids, ``executing``), 2 (the journal's second half, ``completed``,
and ``PendingCall.interrupted``; a v1 checkpoint has no completion records, so a v1 turn
that was ``executing`` puts every approved call with side effects back to a person,
SPEC R1).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping

from tao.state.jsontypes import JSON, JSONObject, canonical_json

#: Takes a record's JSON from one schema version to the next (:data:`tao.state.codec.Upgrade`).
Upgrade = Callable[[JSONObject], JSONObject]

CHECKPOINT_VERSION = 2


def _checkpoint_from_v0(data: JSONObject) -> JSONObject:
    """tao ≤ 0.1: ``elapsed``, pending calls without their step, decisions by position."""
    upgraded = dict(data)
    if "elapsed_s" not in upgraded and "elapsed" in upgraded:
        upgraded["elapsed_s"] = upgraded.pop("elapsed")
    step = data.get("step")
    step = step if isinstance(step, int) else 0
    pending = data.get("pending")
    by_position: dict[str, str] = {}
    if isinstance(pending, list):
        calls: list[JSON] = []
        for call in pending:
            if isinstance(call, dict):
                call = {"step": step, "position": 0, **call}
                by_position[str(call["position"])] = _call_id(call)
            calls.append(call)
        upgraded["pending"] = calls
    decisions = data.get("decisions")
    if isinstance(decisions, dict):
        upgraded["decisions"] = {by_position.get(k, k): v for k, v in decisions.items()}
    return upgraded


def _call_id(call: JSONObject) -> str:
    """A pending call's id as version 1 made it: ``s{step}c{position}-{digest[:12]}``."""
    text = canonical_json({"tool": call.get("tool"), "arguments": call.get("arguments")})
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return f"s{call['step']}c{call['position']}-{digest[:12]}"


def _unchanged(data: JSONObject) -> JSONObject:
    """A version that only added keys: the codec gives them their defaults."""
    return data


#: Checkpoint version ``n`` -> the upgrade to ``n + 1``.
CHECKPOINT: dict[int, Upgrade] = {
    0: _checkpoint_from_v0,
    1: _unchanged,  # v2 added ``completed`` and ``PendingCall.interrupted``: none recorded
}

#: Records without a version: an absent key reads as this, not as the field's default.
USAGE_MISSING: JSONObject = {"cost_usd": None}
"""Usage written before costs were kept: the cost is unknown, not zero."""


def step_without_argument(data: Mapping[str, JSON]) -> Mapping[str, JSON]:
    """A step as tao wrote it up to run-log schema 11: ``argument`` (the text as written,
    the answer for ``finish``) beside ``arguments``. Now ``arguments`` is the one field:
    a final answer is ``{"answer": text}``, and the text survives only as ``unparsed``,
    for a call that never became arguments."""
    if "argument" not in data:
        return data
    upgraded = dict(data)
    text = upgraded.pop("argument")
    if upgraded.get("arguments") is None and isinstance(text, str):
        if upgraded.get("tool") == "finish":
            upgraded["arguments"] = {"answer": text}
        else:
            upgraded["unparsed"] = text
    return upgraded
