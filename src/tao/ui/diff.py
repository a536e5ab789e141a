"""Coloured unified diffs for ``tao ui``: what a write would change, red and green.

A write tool's preview (see :func:`tao.tools.write.diff`) and any observation that
is a unified diff (``git diff`` run by a tool) are shown line by line: additions
``d-add`` (green), deletions ``d-del`` (red), hunk headers ``d-hunk``, file
headers ``d-file``. Each line is escaped here like every other text of a run (S9):
a diff of a file holding ``<script>`` shows the tag as text.
"""

from __future__ import annotations

import re
from html import escape as _html_escape

from tao.format import terminal_safe

#: A hunk header: ``@@ -1,3 +1,4 @@``.
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")


def escape(text: str) -> str:
    """HTML-escaped, controls and bidi characters shown as escapes (as :func:`tao.ui.pages.e`)."""
    return _html_escape(terminal_safe(text))


def is_diff(text: str) -> bool:
    """Whether ``text`` reads as a unified diff: file headers and at least one hunk."""
    lines = text.splitlines()
    has_files = any(line.startswith("--- ") for line in lines) and any(
        line.startswith("+++ ") for line in lines
    )
    return has_files and any(_HUNK.match(line) for line in lines)


def _line_class(line: str) -> str:
    if line.startswith(("--- ", "+++ ")):
        return "d-file"
    if line.startswith("@@"):
        return "d-hunk"
    if line.startswith("+"):
        return "d-add"
    if line.startswith("-"):
        return "d-del"
    return "d-ctx"


def text_block(text: str, css_class: str = "") -> str:
    """``<pre>`` of ``text``, escaped; a unified diff gets one coloured span per line."""
    if not is_diff(text):
        attribute = f' class="{escape(css_class)}"' if css_class else ""
        return f"<pre{attribute}>{escape(text)}</pre>"
    lines = "".join(
        f'<span class="{_line_class(line)}">{escape(line)}\n</span>' for line in text.splitlines()
    )
    return f'<pre class="{escape(f"{css_class} diff".strip())}">{lines}</pre>'
