"""Finding protocol labels in a reply in linear time (SPEC L10, L14).

A reply is untrusted text of up to a megabyte, and the parser must read it in well
under 50 ms. Regular expressions that *search* with a leading ``[\\s*_]*`` or ``^`` are
quadratic on long runs of spaces, newlines or labels, so nothing here searches with
one: label words are found with ``str.find`` on a lower-cased copy (C speed), and
the small regular expressions below are only ever *matched* at a known position,
with possessive quantifiers, so no text is read twice by one check.

Every label that is looked at and rejected costs a step of a per-reply budget; a
reply that spends it all (thousands of malformed labels) raises :class:`Exhausted`,
which the parser turns into a format reminder. That bounds the work on adversarial
replies without changing how any plausible reply reads.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from tao.protocol.labels import Labels

__all__ = [
    "ACTION_INPUT",
    "Exhausted",
    "Found",
    "Scanner",
    "action_input_words",
    "lower_same_length",
    "strip_thinking",
]

#: Label rejections one reply may cost before it is declared unreadable.
BUDGET = 1500
#: Reasoning blocks past which a reply is not read block by block (each costs a regex match).
MAX_THINK_BLOCKS = 256
#: Emphasis and heading marks a model may wrap around a label: **Action:**, ## Thought, `Action`:
MARKS = "*_#>`~"
#: Emphasis marks looked back over before a label; longer runs are not emphasis.
MAX_MARKS = 32
#: Indentation and marks looked back over before a line-start label.
MAX_INDENT = 64

#: The LangChain "Action Input" label, per language: the first is canonical (prompts use it);
#: the others are spellings models write, the English one included, since only a line
#: right after a localised ``Action: tool`` line is ever read as one.
ACTION_INPUT: dict[str, tuple[str, ...]] = {
    "en": ("Action Input",),
    "tr": ("Eylem Girdisi", "Eylem Girişi", "Eylem Input", "Action Input"),
    "ar": ("مدخلات الإجراء", "مدخل الإجراء", "إدخال الإجراء", "Action Input"),
    "ja": ("行動入力", "行動の入力", "行動 Input", "Action Input"),
    "sv": ("Handlingsindata", "Handlingens indata", "Indata", "Handling Input", "Action Input"),
}

# After a label word: an optional step number, emphasis, the colon (full-width too).
_TAIL = re.compile(r"(?:\s*+\d++)?+[\s*_#>`~]*+[:：]")
# After the colon: emphasis and whitespace, up to the label's content.
_POST = re.compile(r"[\s*_#>`~]*+")
# Everything a line may hold before a line-start label: spaces and marks, no newline.
_INDENT = re.compile(r"[^\S\n]*+(?:[*_#>`~]++[^\S\n]*+)*+")
_THINK_BLOCK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.S | re.I)
_THINK_OPEN = re.compile(r"<think(?:ing)?>", re.I)
_THINK_CLOSE = re.compile(r"</think(?:ing)?>", re.I)
_ANY_TAG = re.compile(r"</?think", re.I)


class Exhausted(Exception):
    """The reply holds more malformed labels than any model writes; it cannot be read."""


def lower_same_length(text: str) -> str:
    """Lower-case ``text`` without changing any offset (only U+0130 grows under lower())."""
    return text.replace("\u0130", "i").lower()


@lru_cache(maxsize=64)
def _lower(word: str) -> str:
    return lower_same_length(word)


def action_input_words(labels: Labels) -> tuple[str, ...]:
    """The Action Input label in ``labels``' language (English spelling for unknown codes)."""
    return ACTION_INPUT.get(labels.code, (f"{labels.action} Input",))


def _after_last_close(low: str) -> int:
    """Where the text after the last ``</think>`` or ``</thinking>`` starts, or 0.

    ``str.rfind`` on the lower-cased twin, not a case-blind regex: Python's ``re`` cannot
    skip ahead to a literal under ``re.I``, and 1 MB of ``<think>`` took 18 ms per search.
    """
    return max(
        (at + len(tag) for tag in ("</think>", "</thinking>") if (at := low.rfind(tag)) >= 0),
        default=0,
    )


def strip_thinking(text: str) -> str:
    """Drop ``<think>`` blocks: an Action inside a reasoning block is not an action (L10).

    Linear: complete blocks are removed only up to the last closing tag, so the lazy
    ``.*?`` never runs to the end of the text from an unclosed tag; text before a stray
    closing tag (up to the last one) is the tail of a block the chat template opened, and
    an unclosed tag hides everything after it.
    """
    if _ANY_TAG.search(text) is None:
        return text  # the common case: nothing to strip
    low = lower_same_length(text)
    closed = _after_last_close(low)
    if low.count("<think", 0, closed) > MAX_THINK_BLOCKS:
        # More blocks than any model writes: keep only what follows the last closing tag.
        # It drops more than the block-by-block reading, never less, so nothing inside a
        # block becomes an action, and the text stays linear at C speed.
        closed_text = text[closed:]
        unclosed = _THINK_OPEN.search(closed_text)
        return closed_text[: unclosed.start()] if unclosed is not None else closed_text
    out = _THINK_BLOCK.sub("", text[:closed]) + text[closed:]
    out = out[_after_last_close(lower_same_length(out)) :]
    unclosed = _THINK_OPEN.search(out)
    return out[: unclosed.start()] if unclosed is not None else out


class Found(NamedTuple):
    """A label: where it starts (its marks included), where its content starts, its word."""

    start: int
    end: int
    word: str


@dataclass
class Scanner:
    """One reply, its lower-cased twin, and the budget of label rejections left."""

    text: str
    labels: Labels
    low: str = ""
    budget: int = BUDGET
    _line: tuple[int, int] = (-1, -1)

    def __post_init__(self) -> None:
        self.low = lower_same_length(self.text)

    def spend(self) -> None:
        self.budget -= 1
        if self.budget < 0:
            raise Exhausted

    # -- words ---------------------------------------------------------------------------

    @property
    def action_words(self) -> tuple[str, ...]:
        return (self.labels.action,)

    @property
    def input_words(self) -> tuple[str, ...]:
        return action_input_words(self.labels)

    @property
    def all_words(self) -> tuple[str, ...]:
        lab = self.labels
        return (lab.thought, lab.action, lab.observation, *lab.answer_words, *self.input_words)

    # -- labels --------------------------------------------------------------------------

    def colon(self, pos: int) -> int:
        """End of the colon after a label word ending at ``pos`` (``Action 2 :``), or -1."""
        found = _TAIL.match(self.text, pos)
        return found.end() if found is not None else -1

    def tail(self, pos: int) -> int:
        """End of the label whose word ends at ``pos`` (after colon and marks), or -1."""
        colon = _TAIL.match(self.text, pos)
        if colon is None:
            return -1
        post = _POST.match(self.text, colon.end())
        return post.end() if post is not None else colon.end()

    def inline_start(self, pos: int) -> int:
        """Start of an Action label whose word is at ``pos``: after whitespace, marks allowed."""
        start = pos
        while start > 0 and pos - start < MAX_MARKS and self.text[start - 1] in MARKS:
            start -= 1
        if start == 0 or self.text[start - 1].isspace():
            return start
        return -1

    def inline_label(self, words: Sequence[str], pos: int, end: int) -> Found | None:
        """The first label of ``words`` in ``[pos, end)`` that may stand mid-line (Action)."""
        best: Found | None = None
        for word in words:
            needle = _lower(word)
            at = self.low.find(needle, pos, end)
            while at != -1 and (best is None or at < best.start):
                start = self.inline_start(at)
                stop = self.tail(at + len(needle)) if start != -1 else -1
                if stop != -1:
                    best = Found(start, stop, word)
                    break
                self.spend()
                at = self.low.find(needle, at + 1, end)
        return best

    def line_label(self, words: Sequence[str], pos: int, end: int | None = None) -> Found | None:
        """The first label of ``words`` that starts a line (marks and indent allowed) in range.

        Only the first occurrence of a word on a line can start it, so a rejected one skips
        the rest of its line: one budget step per line, never one per character.
        """
        end = len(self.text) if end is None else end
        best: Found | None = None
        for word in words:
            found = self._line_word(_lower(word), word, pos, end, best)
            if found is not None:
                best = found
        return best

    def _line_word(
        self, needle: str, word: str, pos: int, end: int, best: Found | None
    ) -> Found | None:
        limit = end if best is None else min(end, best.start)
        at = self.low.find(needle, pos, limit)
        while at != -1:
            start = self.line_start(at)
            if start != -1:
                stop = self.tail(at + len(needle))
                if stop != -1:
                    return Found(start, stop, word)
            self.spend()
            nxt = self.text.find("\n", at, limit)
            if nxt == -1:
                return None
            at = self.low.find(needle, nxt + 1, limit)
        return None

    def line_start(self, pos: int) -> int:
        """Where ``pos``'s line starts if only indentation and marks precede ``pos``, else -1."""
        low = max(0, pos - MAX_INDENT)
        newline = self.text.rfind("\n", low, pos)
        start = newline + 1 if newline != -1 else (0 if low == 0 else -1)
        if start != -1 and _INDENT.fullmatch(self.text, start, pos) is not None:
            return start
        return -1

    def line_end(self, pos: int) -> int:
        """Index of the newline that ends ``pos``'s line (or the text's length).

        Callers ask in increasing order, often many times on one long line: the last
        answer is kept, so a long line is read once.
        """
        first, last = self._line
        if first <= pos <= last:
            return last
        found = self.text.find("\n", pos)
        last = len(self.text) if found == -1 else found
        self._line = (pos, last)
        return last

    def labelled_line(self, pos: int, end: int) -> bool:
        """Whether a line in ``[pos, end)`` starts with any label or holds an Action label."""
        return (
            self.line_label(self.all_words, pos, end) is not None
            or self.inline_label(self.action_words, pos, end) is not None
        )
