"""One redaction pass over a text, linear in its length (SPEC S5, S8, S11).

Detection is layered, because no single list of expressions keeps up:

1. detect-secrets' maintained plugins, on bounded windows (:mod:`tao.redact.plugins`);
2. shapes the plugins miss (:mod:`tao.redact.shapes`), PEM blocks included;
3. labelled values, ``key=value`` in any quoting (:mod:`tao.redact.labels`);
4. URL passwords and signed-URL signatures (:mod:`tao.redact.urls`);
5. command-line credentials and netrc (:mod:`tao.redact.commandline`);
6. unlabelled random values in env-style lines (:mod:`tao.redact.entropy`);
7. base64 and hex of any of the above (:mod:`tao.redact.encoded`);
8. tokens split across lines or string pieces (:mod:`tao.redact.joined`);
9. escapes and look-alike characters, read as a person reads them
   (:mod:`tao.redact.unescaped`).

Every layer reads the text in forward scans with bounded looks around each candidate,
so a crafted 10 MB text takes about as long per byte as an ordinary one. A cheap
pre-check lets text with no candidate skip all of it, since redaction runs on every
observation.

    >>> redact("OPENAI_API_KEY=sk-proj-abc123def456ghi789jkl012")
    'OPENAI_API_KEY=[REDACTED]'
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from tao.redact.commandline import command_spans
from tao.redact.encoded import encoded_spans
from tao.redact.entropy import entropy_spans
from tao.redact.joined import join
from tao.redact.known import generation, known_spans
from tao.redact.labels import labelled_spans
from tao.redact.marker import Span, merge, replace
from tao.redact.plugins import plugin_spans
from tao.redact.runs import TOKEN, Classes
from tao.redact.shapes import pem_spans, shape_spans
from tao.redact.unescaped import may_be_escaped, unescaped_spans
from tao.redact.urls import redact_url_with, url_spans

#: Something any layer needs: a run of 16 token characters, a label word, an assignment
#: or option, a URL, a netrc ``password``. Text without one is returned as it is after a
#: few ``str.find``.
_MARKS = ("=", ":", "-", "_", ".")
_RUN = 16
#: How far from a joint (:mod:`tao.redact.joined`) a secret across it is looked for: past
#: the widest neighbourhood a layer reads for one value (a detector's window, an encoded
#: run's piece).
_JOINT_REACH = 4_096
#: Texts redacted lately: a step's observation is redacted for the model, then again for
#: the log and the screen; the same string is scanned once. Long texts are not kept.
_MEMO_CHARS = 8_192


@dataclass(frozen=True, slots=True)
class Redaction:
    """A redacted text and how many values were hidden in it (for "2 values hidden")."""

    text: str
    hidden: int


def redact(text: str) -> str:
    """Replace every secret in ``text`` by ``[REDACTED]``; text without any comes back as is."""
    return redaction(text).text


def redact_url(url: str) -> str:
    """``url`` with its password (and secret-looking query values) replaced: safe to store.

    ``https://user:pw@host/v1?api_key=X`` → ``https://user:[REDACTED]@host/v1?api_key=[REDACTED]``;
    a URL that does not parse is redacted as text.
    """
    return redact_url_with(url, redact)


def redaction(text: str) -> Redaction:
    """:func:`redact`, also saying how many values it hid."""
    if len(text) <= _MEMO_CHARS:
        return _memo(text, generation())
    return _redaction(text)


@lru_cache(maxsize=512)
def _memo(text: str, known: int) -> Redaction:
    """``known``: the registry's generation, so a value registered later is not missed."""
    return _redaction(text)


def _redaction(text: str) -> Redaction:
    spans = find_secrets(text)
    return Redaction(replace(text, spans), len(spans))


def find_secrets(text: str) -> list[Span]:
    """The sorted, merged spans of ``text`` that hold secrets (empty for most text)."""
    known = known_spans(text)  # values tao handed out (tao.redact.known): any text
    classes = Classes(text)
    if (
        not any(mark in text for mark in _MARKS)
        and next(classes.runs(TOKEN, _RUN), None) is None
        and "passw" not in text.lower()  # netrc: ``machine host login me password pw``
        and not may_be_escaped(text)  # %67%68%70…, pаssword (tao.redact.unescaped)
    ):
        return merge(known)
    spans = plain_spans(text, classes)
    spans.extend(known)
    spans.extend(encoded_spans(text, plain_spans, classes, spans))
    joined = join(text)
    if joined is not None:
        for start, end in joined.windows(_JOINT_REACH):
            for span_start, span_end in plain_spans(joined.text[start:end]):
                span = (start + span_start, start + span_end)
                if joined.crosses(span):
                    spans.append(joined.original(span))
    spans.extend(unescaped_spans(text, plain_spans))
    return merge(spans)


def plain_spans(text: str, classes: Classes | None = None) -> list[Span]:
    """Every layer but the decoding and joining ones, merged."""
    lowered = _lowered(text)
    spans: list[Span] = []
    if "private key" in lowered:
        spans.extend(pem_spans(text))
    spans.extend(shape_spans(text, lowered))
    spans.extend(labelled_spans(text, lowered))
    spans.extend(url_spans(text))
    spans.extend(command_spans(text, lowered))
    spans.extend(entropy_spans(text))
    spans.extend(plugin_spans(text, lowered, classes))
    return merge(spans)


_ASCII_LOWER = {code: code + 32 for code in range(65, 91)}


def _lowered(text: str) -> str:
    """``text`` in lower case, position for position (a few non-ASCII letters grow when
    lowered; those are left as they are)."""
    lowered = text.lower()
    if len(lowered) != len(text):
        lowered = text.translate(_ASCII_LOWER)
    return lowered


__all__ = ["Redaction", "find_secrets", "plain_spans", "redact", "redact_url", "redaction"]
