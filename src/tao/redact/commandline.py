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
#: netrc, in lowered text: ``machine HOST [login USER] password SECRET`` on one line, and
#: a line that is only ``password SECRET``. Each opens with a literal (a keyword, a line
#: break), so :mod:`re` skips to the next one at C speed instead of trying every position.
_NETRC_INLINE = re.compile(
    r"(?:machine|default|login)[ \t]++\S{1,256}+(?:[ \t]++(?:login|account)[ \t]++\S{1,256}+)?+"
    r"[ \t]++passw(?:or)?d[ \t]++(\S{1,1000}+)"
)
#: The longest first line read as a netrc ``password SECRET`` line.
_FIRST_LINE = 1_300
_NETRC_LINE = re.compile(r"\n[ \t]*+passw(?:or)?d[ \t]++(\S{1,1000}+)[ \t]*+(?=\n|\Z)")


def command_spans(text: str, lowered: str | None = None) -> Iterator[Span]:
    """Passwords and tokens given as command-line options, and netrc passwords."""
    lowered = text.lower() if lowered is None else lowered
    yield from _mysql_spans(text, lowered)
    if "-" in text:
        yield from _option_spans(text)
    yield from _netrc_spans(text, lowered)


def _netrc_spans(text: str, lowered: str) -> Iterator[Span]:
    """netrc passwords (both forms hold ``password`` or ``passwd``), found in ``lowered``."""
    if "passw" not in lowered:
        return
    position = 0
    while (match := _NETRC_INLINE.search(lowered, position)) is not None:
        at = match.start()
        if at and (lowered[at - 1].isalnum() or lowered[at - 1] in "_-"):
            position = at + 1  # part of a longer word (``relogin``): look on from the next
            continue
        position = match.end()
        yield match.span(1)
    for match in _NETRC_LINE.finditer(lowered):
        yield match.span(1)
    line_end = lowered.find("\n", 0, _FIRST_LINE)  # the first line has no break before it
    if line_end >= 0 or len(lowered) <= _FIRST_LINE:
        first = _NETRC_LINE.match("\n" + (lowered[:line_end] if line_end >= 0 else lowered))
        if first is not None:
            yield first.start(1) - 1, first.end(1) - 1


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
