"""Secrets known by their shape: provider tokens, bearer tokens, JWTs, PEM private keys.

Shapes the detect-secrets plugins miss or that must also be found inside decoded text
(:mod:`tao.redact.encoded`): Anthropic and new OpenAI keys, Stripe test keys, Google
keys, npm/PyPI/Hugging Face/GitLab tokens, Slack and Discord webhooks, AWS key ids,
bearer tokens and whole PEM private-key blocks. Every expression is one forward scan
with possessive runs, so no crafted text makes it backtrack.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tao.redact.marker import Span

#: What a provider token is extended over: the rest of its unseparated run. A token's
#: end is not knowable when another is glued to it (``hf_…hf_…``: the first match stops
#: at the second's ``_`` and the second's prefix is gone), so the whole run is hidden; the
#: run is possessive and ``finditer`` resumes past it, so each character is read once.
_GLUED = r"[A-Za-z0-9_\-]*+"

#: Each shape with the literal its text must hold (in lower case), so that a text
#: without it costs one fast substring search instead of a scan.
_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (gate, re.compile(pattern))
    for gate, pattern in (
        ("github_pat_", r"github_pat_[A-Za-z0-9_]{22,}+" + _GLUED),
        ("_", r"gh[pousr]_[A-Za-z0-9]{30,}+" + _GLUED),
        ("gl", r"gl(?:pat|dt|ft|rt|soat|cbt|imt|ptt|oas)-[A-Za-z0-9_\-]{20,}+" + _GLUED),
        ("npm_", r"npm_[A-Za-z0-9]{36}" + _GLUED),
        ("sk-", r"sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}+"),
        ("pypi-", r"pypi-[A-Za-z0-9_\-]{50,}+" + _GLUED),
        ("sg.", r"SG\.[A-Za-z0-9_\-]{16,}+\.[A-Za-z0-9_\-]{16,}+"),
        ("xox", r"xox[abposre]-[A-Za-z0-9\-]{10,}+"),
        (
            "hooks.slack.com/",
            r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]++",
        ),
        ("k_", r"(?<![A-Za-z0-9])[sr]k_(?:live|test)_[0-9A-Za-z]{10,}+" + _GLUED),
        ("aiza", r"AIza[0-9A-Za-z_\-]{35}" + _GLUED),
        ("ya29.", r"ya29\.[0-9A-Za-z_\-]{20,}+"),
        ("hf_", r"hf_[A-Za-z0-9]{30,}+" + _GLUED),
        ("a", r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}" + _GLUED),
        ("discord", r"discord(?:app)?\.com/api/webhooks/[0-9]++/[A-Za-z0-9_\-]++"),
        ("bearer", r"[Bb][Ee][Aa][Rr][Ee][Rr][ \t]++[A-Za-z0-9._~+/\-]{12,}+=*+"),
        ("eyj", r"eyJ[A-Za-z0-9_\-]{4,}+\.[A-Za-z0-9_\-]{4,}+\.?[A-Za-z0-9_\-+/=]*+"),
    )
)
_XML = re.compile(
    r"<([\w:\-]{0,40}(?i:password|passwd|secret|token|api_?key)[\w:\-]{0,40}+)>"
    r"([^<\n]{1,1000}+)(?=</\1>)"
)
_PEM_BEGIN = re.compile(r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY[ A-Z]{0,10}+-----")
_PEM_END = re.compile(r"-----END[ A-Z0-9]{0,40}PRIVATE KEY[ A-Z]{0,10}+-----")
#: What a cut PEM block (no END line) is taken up to: where its key material stops.
_PEM_BODY = re.compile(r"[A-Za-z0-9+/=\s:,\-]{0,8192}+")
_PEM_MAX = 8_192


def shape_spans(text: str, lowered: str) -> Iterator[Span]:
    """Every provider-shaped token, bearer token, JWT and secret XML element's value."""
    for gate, pattern in _SHAPES:
        if gate in lowered:
            for match in pattern.finditer(text):
                yield match.span()
    if "</" in text:
        for match in _XML.finditer(text):
            yield match.span(2)


def pem_spans(text: str) -> Iterator[Span]:
    """Whole PEM private-key blocks (a detector finds only their first line); a block cut
    before its END line is taken up to where the key material stops.

    The next END line is looked for once and reused for every BEGIN before it, so a
    text of a thousand BEGIN lines is read once, not a thousand times.
    """
    end_at = -1
    end_match: re.Match[str] | None = None
    position = 0
    while (begin := _PEM_BEGIN.search(text, position)) is not None:
        start = begin.start()
        if end_at < start:
            end_match = _PEM_END.search(text, begin.end())
            end_at = end_match.start() if end_match is not None else len(text) + 1
        if end_match is not None and end_at - start <= _PEM_MAX:
            stop = end_match.end()
        else:
            body = _PEM_BODY.match(text, begin.end())
            stop = body.end() if body is not None else begin.end()
        yield start, stop
        position = max(stop, begin.end())
