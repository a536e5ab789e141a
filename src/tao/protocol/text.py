"""Reading a model's reply in the text protocol (SPEC L2, L4, L7, L9, L10).

``parse_reply`` is total: for *any* string it returns an :class:`Action`, a
:class:`FinalAnswer` or a :class:`ParseFailure`, never an exception. The loop
only ever sees those three shapes.

    >>> reply = "Thought: easy.\\nAction: calculator[2 + 2]\\nObservation: 4"
    >>> parse_reply(reply, LABELS["en"]).argument
    '2 + 2'
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from tao.protocol.labels import LABELS, Labels

__all__ = ["Action", "FinalAnswer", "ParseFailure", "Parsed", "cut_at_stop", "parse_reply"]

FINISH = "finish"


@dataclass(frozen=True)
class Action:
    """One tool call; ``text`` is the reply cut right after it, as the transcript keeps it."""

    thought: str | None
    tool: str
    argument: str
    form: Literal["bracket", "call"]
    text: str


@dataclass(frozen=True)
class FinalAnswer:
    """The run's answer, from ``finish[...]`` or a final-answer label line."""

    thought: str | None
    answer: str
    text: str


@dataclass(frozen=True)
class ParseFailure:
    """No action and no answer could be read; ``reason`` says what was wrong."""

    thought: str | None
    reason: str
    text: str


Parsed = Action | FinalAnswer | ParseFailure

_THINK_BLOCK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.S | re.I)
_THINK_OPEN = re.compile(r"<think(?:ing)?>.*", re.S | re.I)
_THINK_CLOSE = re.compile(r"^.*?</think(?:ing)?>", re.S | re.I)
# Emphasis and heading marks a model may wrap around a label: **Action:**, ## Thought, `Action`:
_DECOR = r"[\s*_#>`~]*"


@dataclass(frozen=True)
class _Patterns:
    action: re.Pattern[str]
    answer: re.Pattern[str]
    thought: re.Pattern[str]
    observation: re.Pattern[str]
    any_label: re.Pattern[str]


def _label_re(words: Sequence[str], *, line_start: bool) -> str:
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    lead = r"(?:^|(?<=\s))" if not line_start else r"^"
    # "Thought 3:", "**Action**:", "Action 2 :", full-width colon (ja), Arabic digits too.
    return rf"{lead}{_DECOR}(?:{alternatives})(?:\s*\d+)?{_DECOR}\s*[:：]{_DECOR}[ \t]*"


@lru_cache(maxsize=32)
def _patterns(labels: Labels) -> _Patterns:
    flags = re.M | re.I
    return _Patterns(
        action=re.compile(_label_re([labels.action], line_start=False), flags),
        answer=re.compile(_label_re(labels.answer_words, line_start=True), flags),
        thought=re.compile(_label_re([labels.thought], line_start=True), flags),
        observation=re.compile(_label_re([labels.observation], line_start=True), flags),
        any_label=re.compile(
            _label_re(
                [labels.thought, labels.action, labels.observation, *labels.answer_words],
                line_start=True,
            ),
            flags,
        ),
    )


_EMPHASIS = re.compile(r"[`*_]*")
# name[argument] or name(argument); the name may be wrapped in emphasis or backticks.
_CALL_HEAD = re.compile(r"[`*_\s]*([^\W\d][\w.\-]*)\s*([\[(])", re.U)


def strip_thinking(text: str) -> str:
    """Drop ``<think>`` blocks: an Action inside a reasoning block is not an action (L10)."""
    if "think" not in text.lower():
        return text  # the common case: nothing to strip, no regex to run
    text = _THINK_BLOCK.sub("", text)
    text = _THINK_CLOSE.sub("", text) if re.search(r"</think", text, re.I) else text
    return _THINK_OPEN.sub("", text)


def cut_at_stop(text: str, stops: Sequence[str]) -> str:
    """Cut ``text`` at the first stop sequence, for backends that ignore ``stop`` (L3)."""
    cut = len(text)
    for stop in stops:
        if stop and (at := text.find(stop)) != -1:
            cut = min(cut, at)
    return text[:cut]


def parse_reply(text: str, labels: Labels = LABELS["en"]) -> Parsed:
    """Read the first Action or final answer in ``text``; never raises (L4)."""
    try:
        return _parse(text, labels)
    except RecursionError:  # pathological input; still an answer, not a crash
        return ParseFailure(None, "the reply could not be read", "")


def _parse(raw: str, labels: Labels) -> Parsed:
    text = strip_thinking(raw.replace("\r\n", "\n")).strip()
    pats = _patterns(labels)
    action = _find_action(text, pats)
    answer = pats.answer.search(text)
    if action is not None and (answer is None or action[0] <= answer.start()):
        start, end, tool, argument, form = action
        thought = _thought(text[:start], pats)
        kept = text[:end].rstrip()
        if tool.lower() == FINISH:
            answer_text = _finish_argument(argument, form)
            if answer_text:
                return FinalAnswer(thought, answer_text, kept)
            return ParseFailure(
                thought, f"{FINISH}[...] needs the answer inside the brackets", kept
            )
        return Action(thought, tool, argument.strip(), form, kept)
    if answer is not None:
        rest = text[answer.end() :]
        after = pats.any_label.search(rest)
        body = rest[: after.start()] if after else rest
        if body.strip():
            kept = text[: answer.end() + len(body)].rstrip()
            return FinalAnswer(_thought(text[: answer.start()], pats), body.strip(), kept)
    text = _first_turn(text, pats)
    bad_action = pats.action.search(text)
    thought = _thought(text[: bad_action.start()] if bad_action else text, pats)
    if bad_action:
        reason = (
            f"the {labels.action} line must name one tool followed by its argument "
            f"in brackets, like {labels.action}: tool[argument]"
        )
    elif not text:
        reason = "the reply was empty"
    else:
        reason = f"the reply has no {labels.action} line and no {labels.answer} line"
    return ParseFailure(thought, reason, text)


def _find_action(
    text: str, pats: _Patterns
) -> tuple[int, int, str, str, Literal["bracket", "call"]] | None:
    """Locate the first well-formed Action; returns (label start, end, tool, argument, form)."""
    for label in pats.action.finditer(text):
        head = _CALL_HEAD.match(text, label.end())
        if head is None:
            continue
        tool, opener = head.group(1), head.group(2)
        closer = "]" if opener == "[" else ")"
        end = _closing(text, head.end(), closer, pats)
        if end is None:
            continue
        argument = text[head.end() : end]
        tail = _EMPHASIS.match(text, end + 1)
        stop = tail.end() if tail else end + 1
        return label.start(), stop, tool, argument, "bracket" if opener == "[" else "call"
    return None


def _closing(text: str, start: int, closer: str, pats: _Patterns) -> int | None:
    """The argument runs to the last ``closer`` on the Action line (answers may hold brackets).

    When the line has none, the argument may continue on the next lines, up to the
    first line that closes it, but never past another label.
    """
    line_end = text.find("\n", start)
    line = text[start:] if line_end == -1 else text[start:line_end]
    if (at := line.rfind(closer)) != -1:
        return start + at
    pos = line_end
    while pos != -1:
        nxt = text.find("\n", pos + 1)
        line = text[pos + 1 :] if nxt == -1 else text[pos + 1 : nxt]
        if pats.any_label.match(line) or pats.action.search(line):
            return None
        if (at := line.rfind(closer)) != -1:
            return pos + 1 + at
        pos = nxt
    return None


def _finish_argument(argument: str, form: str) -> str:
    """``finish(answer="x")`` and ``finish("x")`` mean the same as ``finish[x]``."""
    text = argument.strip()
    if form == "call":
        try:
            call = ast.parse(f"f({text})", mode="eval").body
            if isinstance(call, ast.Call) and len(call.args) + len(call.keywords) == 1:
                node = call.args[0] if call.args else call.keywords[0].value
                value = ast.literal_eval(node)
                return str(value).strip()
        except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
            pass
    return text


def _thought(prefix: str, pats: _Patterns) -> str | None:
    match = pats.thought.search(prefix)
    body = prefix[match.end() :] if match else prefix
    body = body.strip().strip("*_").strip()
    return body or None


def _first_turn(text: str, pats: _Patterns) -> str:
    """What of an unparseable reply may enter the transcript: nothing from a made-up Observation."""
    match = pats.observation.search(text)
    return text[: match.start()].rstrip() if match else text
