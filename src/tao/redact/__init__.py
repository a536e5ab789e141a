"""Secrets never reach the model, the run log or a screen (SPEC S5, S8, S11).

One package, one idea per module:

* :mod:`~tao.redact.scan`: one linear pass, :func:`redact` and :func:`find_secrets`;
* :mod:`~tao.redact.plugins`, :mod:`~tao.redact.shapes`: secrets by their shape;
* :mod:`~tao.redact.keys`, :mod:`~tao.redact.labels`: secrets by their label;
* :mod:`~tao.redact.urls`, :mod:`~tao.redact.commandline`, :mod:`~tao.redact.entropy`,
  :mod:`~tao.redact.encoded`, :mod:`~tao.redact.joined`: where secrets hide;
* :mod:`~tao.redact.structured`: JSON values, walked instead of redacted as text;
* :mod:`~tao.redact.budget`: bounded Python work per 1 KB block, a dense block hidden whole;
* :mod:`~tao.redact.marker`: the ``[REDACTED]`` marker and "2 values hidden".

    >>> redact("OPENAI_API_KEY=sk-proj-abc123def456ghi789jkl012")
    'OPENAI_API_KEY=[REDACTED]'
"""

from __future__ import annotations

from tao.redact.keys import secret_key
from tao.redact.marker import REDACTED, Span, hidden_note
from tao.redact.scan import Redaction, find_secrets, redact, redact_url, redaction
from tao.redact.structured import redact_json, redact_optional

__all__ = [
    "REDACTED",
    "Redaction",
    "Span",
    "find_secrets",
    "hidden_note",
    "redact",
    "redact_json",
    "redact_optional",
    "redact_url",
    "redaction",
    "secret_key",
]
