"""Values known to be secret, hidden verbatim wherever they appear (SPEC S5, S8; issue 26).

A secret tao itself handed out has no shape to find it by: ``--pass-env MY_SETTING``
gives a sandboxed test ``MY_SETTING=Zq7hunter2``, and a test that prints the bare value
(``print(os.environ["MY_SETTING"])``, an assertion message, a traceback's locals) puts
``Zq7hunter2`` in its output with no label before it. Every channel text leaves tao
through (the observation the model reads, the run log, ``--json``, the web page, spans,
eval records) passes :func:`tao.redact.redact`, which asks this module first, so one
registry covers them all.

What is known, registered when a run is set up (:func:`remember_environment`), and the
process's own secret-named variables on the first redaction of any process (a ``tao
serve --queue`` storing a posted task, ``tao ui`` or a worker showing a run, ``tao
submit``: none of them sets a run up before it writes or shows text):

* the value of every variable passed with ``--pass-env`` (the user chose to hand it
  to a child), and the password of one that is a URL;
* the value of every variable of tao's own environment whose *name* labels a secret
  (``OPENAI_API_KEY``, ``DB_PASS``, ``MY_TOKEN``: :func:`tao.redact.keys.secret_key`),
  which an in-process Python tool can read and print; paths (``SSH_AUTH_SOCK``) are left;
* an API key given in code (``Agent(api_key=...)``).

Values shorter than :data:`MIN_CHARS` are not registered: hiding every ``true`` or
``8080`` would blank ordinary text, and such a value is no secret worth the name.
A value is found verbatim with ``str.find`` (C speed), and in its disguises: upper-cased,
ROT-n, base64, base85, hex, XOR-ed, deflated... (:mod:`tao.redact.known_forms`, computed
once when it is registered, and :mod:`tao.redact.known_xor`), searched in a few views of
the text (:func:`form_spans`; many forms in one pass, :mod:`tao.redact.known_search`).
Every step is linear in the text, and nothing runs while no value is registered. A value
cut in two across two observations of one run is found by :func:`seam`, which the loop
calls with the end of the observation before (``tao.run.loop``).

    >>> remember(["Zq7hunter2horse"])
    >>> known_spans("value is Zq7hunter2horse.")
    [(9, 24)]
    >>> forget_all()
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from tao.redact.keys import secret_key
from tao.redact.known_forms import (
    DIGITS,
    DROPPED,
    DROPPED_BUT_DIGITS,
    DROPPED_BUT_LETTERS,
    LETTERS,
    ZEROED,
    shift_signature,
    squeeze,
    value_forms,
)
from tao.redact.known_search import Needles, find_forms, mapped, shifted
from tao.redact.known_xor import base64_spans, hex_spans, value_signatures
from tao.redact.marker import Span, merge, replace

#: The shortest value registered.
MIN_CHARS = 8
#: At most this many values are kept (the first ones stay): a bound on the work per text.
MAX_VALUES = 256


@dataclass(frozen=True)
class FormIndex:
    """Every known value's disguised forms, by view, ready to search (built once per
    registration; :mod:`tao.redact.known_forms`, :mod:`tao.redact.known_xor`)."""

    squeezed: Needles = field(default_factory=Needles)
    raw: Needles = field(default_factory=Needles)
    zeroed: Needles = field(default_factory=Needles)
    letter_shifts: tuple[bytes, ...] = ()
    digit_shifts: tuple[bytes, ...] = ()
    xor: tuple[bytes, ...] = ()

    @classmethod
    def of(cls, values: Iterable[str]) -> FormIndex:
        values = tuple(values)
        forms = [value_forms(value) for value in values]
        return cls(
            squeezed=Needles.of(
                (form for value in forms for form in value.exact),
                (form for value in forms for form in value.folded),
            ),
            raw=Needles.of(form for value in forms for form in value.raw),
            zeroed=Needles.of(form for value in forms for form in value.zeroed),
            letter_shifts=_joined(value.letter_shifts for value in forms),
            digit_shifts=_joined(value.digit_shifts for value in forms),
            xor=_joined(value_signatures(value) for value in values),
        )


def _joined(groups: Iterable[tuple[bytes, ...]]) -> tuple[bytes, ...]:
    return tuple(dict.fromkeys(item for group in groups for item in group))


_lock = threading.Lock()
_values: tuple[str, ...] = ()
#: The disguised forms of every value (tao.redact.known_forms), made once, ready to search.
_forms = FormIndex()
_generation = 0
#: What :func:`seam_width` answers, kept with the values (it is asked at every step).
_seam_width = 64
#: Whether this process's own environment was read (once, at the first redaction).
_environment_read = False


def remember(values: Iterable[str | None]) -> None:
    """Hide each of ``values`` (8 characters or more) from now on, in every text."""
    global _values, _forms, _generation, _seam_width
    fresh = [v for v in values if v is not None and len(v.strip()) >= MIN_CHARS]
    with _lock:
        added = tuple(v for v in dict.fromkeys(fresh) if v not in _values)
        if added:
            _values = (_values + added)[:MAX_VALUES]
            _forms = FormIndex.of(_values)
            _generation += 1
            _seam_width = 4 * max(len(value.encode("utf-8")) for value in _values) + 64


def remember_environment(pass_env: Iterable[str], environ: Mapping[str, str] | None = None) -> None:
    """Register the secrets of ``environ`` (tao's own by default): the values passed to
    children by name, and every value under a secret-labelling name (see the module)."""
    source = os.environ if environ is None else environ
    values: list[str] = []
    for name in pass_env:
        if name in source:
            values.extend(_with_password(source[name]))
    for name, value in source.items():
        if secret_key(name) and not value.startswith("/"):
            values.extend(_with_password(value))
    remember(values)


def _with_password(value: str) -> list[str]:
    """``value``, and the password inside it when it is a URL with one."""
    found = [value]
    if "://" in value and "@" in value:
        try:
            password = urlsplit(value.strip()).password
        except ValueError:
            password = None
        if password:
            found.append(password)
    return found


def _read_environment_once() -> None:
    """Register the secret-named variables of this process's environment, once.

    Registration at run set-up alone left every other writer blind: ``tao serve
    --queue`` stored a posted task holding ``$MY_API_KEY``'s value verbatim, because no
    run was set up in that process. Reading the environment at the first redaction covers
    every process, whatever its entry point; one pass over ``os.environ``, once."""
    global _environment_read
    if not _environment_read:
        _environment_read = True
        remember_environment(())


def generation() -> int:
    """A number that changes whenever a value is added (so a memo of old results is stale)."""
    _read_environment_once()
    return _generation


def known_spans(text: str) -> list[Span]:
    """Every place in ``text`` where a registered value appears."""
    _read_environment_once()
    spans = [(start, start + len(value)) for value in _values for start in _starts(text, value)]
    if _values:
        spans.extend(form_spans(text, _forms))  # the value itself is found squeezed too
    return sorted(set(spans))


def form_spans(text: str, index: FormIndex) -> list[Span]:
    """Where ``index``'s forms appear in ``text``, searched in views of it made by C calls:

    * squeezed (ASCII letters and digits, :func:`tao.redact.known_forms.squeeze`) for
      forms whose case matters, and lower-cased for those whose case means nothing (and
      with its digits zeroed, for the ROT-n of a value with few letters); runs of hex in
      it, decoded, for XOR signatures;
    * its letters only, and its digits only, as shift signatures (ROT-n for any n);
    * the text as written, one byte per character, for base85 and for runs of base64
      decoded (XOR signatures).
    """
    view = squeeze(text)
    folded = view.lower()
    squeezed = find_forms(view, folded, index.squeezed) + hex_spans(folded, index.xor)
    if index.zeroed:
        zeroed = folded.translate(ZEROED)
        squeezed += find_forms(zeroed, zeroed, index.zeroed)
    spans = mapped(text, squeezed, DROPPED)
    letters = shift_signature(folded.translate(None, DIGITS), 26)
    spans += mapped(text, shifted(letters, index.letter_shifts), DROPPED_BUT_LETTERS)
    if index.digit_shifts:
        digits = shift_signature(view.translate(None, LETTERS), 10)
        spans += mapped(text, shifted(digits, index.digit_shifts), DROPPED_BUT_DIGITS)
    raw = text.encode("ascii", "replace")  # one byte per character: offsets kept
    if index.raw:
        spans += find_forms(raw, raw.lower(), index.raw)
    spans += base64_spans(raw, index.xor)
    return spans


def _starts(text: str, value: str) -> list[int]:
    """Where ``value`` appears verbatim in ``text`` (``str.find``: C speed)."""
    found: list[int] = []
    start = text.find(value)
    while start != -1:
        found.append(start)
        start = text.find(value, start + len(value))
    return found


#: A value's first part left dangling at the end of an observation is hidden from this
#: many characters (fewer would hide ordinary endings).
MIN_PART = 6


def seam(previous: str, text: str) -> str:
    """``text``, read as what follows ``previous`` (the observation before it in the same
    run, as it was before this hid anything), with a known value cut in two between them
    hidden: the rest of a value whose start ends ``previous`` (in any of its forms: the
    two ends are searched as one text), and a value's first part dangling at the end of
    ``text`` (verbatim, :data:`MIN_PART` characters or more), which the next observation
    may complete. Only the end of one and the start of the other are read."""
    if not _values:
        return text
    width = seam_width()
    tail, head = previous[-width:], text[:width]
    spans = [
        (0, end - len(tail)) for start, end in known_spans(tail + head) if start < len(tail) < end
    ]
    spans.extend(_dangling(text))
    return replace(text, merge(spans))


def seam_width() -> int:
    """How much of an observation's end :func:`seam` reads: room for the longest value's
    widest form (hex with separators: three characters a byte)."""
    return _seam_width


def _dangling(text: str) -> list[Span]:
    """A known value's first part (the longest, verbatim) ending ``text``."""
    end = len(text.rstrip())
    spans: list[Span] = []
    for value in _values:
        for size in range(len(value) - 1, MIN_PART - 1, -1):
            if text.startswith(value[:size], end - size):
                spans.append((end - size, end))
                break
    return spans


def forget_all() -> None:
    """Drop every registered value (for tests that need a clean registry): as in a fresh
    process, the environment is read again at the next redaction."""
    global _values, _forms, _generation, _environment_read, _seam_width
    with _lock:
        _values = ()
        _forms = FormIndex()
        _generation += 1
        _environment_read = False
        _seam_width = 64


__all__ = [
    "MAX_VALUES",
    "MIN_CHARS",
    "forget_all",
    "generation",
    "known_spans",
    "remember",
    "remember_environment",
    "seam",
    "seam_width",
]
