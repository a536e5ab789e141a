"""Credentials on command lines and in netrc files, where no ``=`` labels them.

* ``mysql -pSECRET`` (and ``mariadb``, ``mysqldump``, ``mysqladmin``): the password is
  glued to ``-p``, only on a line that runs one of those;
* ``deploy --password SECRET`` (or a token, an API key): an option whose name is a
  secret's label (:func:`tao.redact.keys.secret_key`), then a space and the value
  (with ``=`` it is a labelled value, see :mod:`tao.redact.labels`);
* ``curl -u user:pass`` (or its long forms, user and proxy user): the part after the colon;
* netrc: ``machine HOST login USER password SECRET`` on one line or several.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tao.redact.budget import BACK, Blocks
from tao.redact.keys import secret_key
from tao.redact.marker import Span
from tao.redact.runs import Needles

_VALUE = r"""('[^'\n]{1,1000}+'|"[^"\n]{1,1000}+"|[^\s'"]{1,1000}+)"""
_MYSQL = ("mysql", "mariadb")
_GLUED_P = re.compile(r"(?<!\S)-p" + _VALUE)
#: How far after ``mysql`` a glued ``-p`` is looked for (one command line).
_MYSQL_LINE = 1_000
#: Each expression opens with a literal ``-``, so :mod:`re` skips to the next dash at
#: ``str.find`` speed instead of trying every position (a look-behind first would).
_OPTION = re.compile(
    r"(-(?<![\w-]-)(?=-?[A-Za-z0-9_\-]{0,60}?(?i:pass|pwd|secret|token|key|auth|cred))"
    r"-?[A-Za-z][A-Za-z0-9_\-]{0,60}+)[ \t]++(?!-)" + _VALUE
)
_USER = re.compile(
    r"-(?<!\S-)(?:u|U|-user|-proxy-user|-basic-auth)(?:[ \t]++|=)"
    r"""(['"]?)([^\s:'"]{1,256}+):([^\s'"]{1,1000}+)\1"""
)
#: Options tried per 1 KB block before the rest of it is hidden whole (:mod:`tao.redact.budget`).
MOST = 32
#: The netrc window around a ``password``: from before its ``machine`` (the longest form
#: puts about 530 characters first), to well after it; a value is at most 1,000 long.
_NETRC_BEFORE = 600
_NETRC_WINDOW = 8_000
_NETRC_AFTER = 1_100
_NETRC = re.compile(
    r"(?i:(?<![\w-])(?:machine|default|login)[ \t]++\S{1,256}+(?:[ \t]++(?:login|account)"
    r"[ \t]++\S{1,256}+)?+[ \t]++(?:password|passwd)[ \t]++)(\S{1,1000}+)"
    r"|(?im:^[ \t]*+(?:password|passwd)[ \t]++)(\S{1,1000}+)[ \t]*+$"
)


def command_spans(text: str, lowered: str | None = None) -> Iterator[Span]:
    """Passwords and tokens given as command-line options, and netrc passwords."""
    lowered = text.lower() if lowered is None else lowered
    yield from _mysql_spans(text, lowered)
    if "-" in text:
        yield from _option_spans(text)
    yield from _netrc_spans(text, lowered)


def _netrc_spans(text: str, lowered: str) -> Iterator[Span]:
    """netrc passwords. Both forms hold ``password`` or ``passwd``, so the expression reads
    only a window around each, and the next is looked for near that window's end: a crafted
    text of ``password=`` repeated is read about once, not tried at every position."""
    position = 0
    size = len(text)
    while (at := lowered.find("passw", position)) >= 0:
        start, end = max(0, at - _NETRC_BEFORE), min(size, at + _NETRC_WINDOW)
        for match in _NETRC.finditer(text, start, end):
            yield match.span(1) if match.group(1) is not None else match.span(2)
        if end >= size:
            return
        position = end - _NETRC_AFTER  # a value the window's end cut is read again whole


def _option_spans(text: str) -> Iterator[Span]:
    """``--password VALUE`` and ``-u user:pass``, each expression's hits bounded per block."""
    for pattern in (_OPTION, _USER):
        blocks = Blocks(text, MOST)
        position = 0
        while (match := pattern.search(text, position)) is not None:
            position = match.end()
            if blocks.full(match.start()):
                span = blocks.hide(match.start())
                yield span
                position = max(position, span[1] - BACK)  # an option cut at the end: again
            elif pattern is _OPTION:
                if secret_key(match.group(1)):
                    yield _unquoted(match, 2)
            elif not (match.group(2).isdigit() and match.group(3).isdigit()):  # -u 1000:1000
                yield match.span(3)


def _mysql_spans(text: str, lowered: str) -> Iterator[Span]:
    """``-pSECRET`` on the command line of a MySQL client: each ``mysql`` opens a window
    of one line, and the next is looked for after it."""
    position = 0
    finder = Needles(_MYSQL, lowered)
    while (hit := finder.search(position)) is not None:
        end = text.find("\n", hit[1], hit[1] + _MYSQL_LINE)
        end = min(len(text), hit[1] + _MYSQL_LINE) if end < 0 else end
        for match in _GLUED_P.finditer(text, hit[1], end):
            yield _unquoted(match, 1)
        position = end


def _unquoted(match: re.Match[str], group: int) -> Span:
    start, end = match.span(group)
    if match.group(group)[:1] in ("'", '"'):
        return start + 1, end - 1
    return start, end
