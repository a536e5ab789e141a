"""Redacted copies of structured data, for everything tao stores or shows (SPEC S8).

:func:`tao.redact.redact` works on text; the run log and ``--json`` hold JSON,
which redacting as text could cut through. These walk the value instead.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

from tao.redact.marker import REDACTED
from tao.redact.scan import redact
from tao.state.jsontypes import JSON

#: Words a key naming a secret holds (``api_key``, ``clientSecret``), in any case.
_LABEL_WORD = re.compile(
    r"(?i:pass|pwd|pw|secret|token|key|auth|cred|dsn|jwt|cookie|session"
    r"|bearer|sig|webhook|sas|hmac|salt|connection|private)"
)


def redact_json(value: JSON) -> JSON:
    """``value`` with secrets redacted inside its strings, still valid JSON (SPEC S8).

    Redacting serialised JSON could cut through its quoting; this walks the value
    instead. A string under a key that names a secret (``"password": "…"``) is
    caught by its label, as ``password = …`` is in text.
    """
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_json(item) for item in value]
    if isinstance(value, dict):
        return {key: _redact_item(key, item) for key, item in value.items()}
    return value


def _redact_item(key: str, item: JSON) -> JSON:
    if isinstance(item, str) and _may_name_a_secret(key):
        labelled = f"{key}={json.dumps(item, ensure_ascii=False)}"
        if redact(labelled) != labelled and redact(item) == item:
            return REDACTED
    return redact_json(item)


@lru_cache(maxsize=1024)
def _may_name_a_secret(key: str) -> bool:
    """Whether a JSON key holds a secret's label (``api_key``); the same few keys recur."""
    return _LABEL_WORD.search(key) is not None


def redact_optional(text: str | None) -> str | None:
    return None if text is None else redact(text)
