"""The one spelling of "a JSON value" in tao, so that no module needs ``Any`` for it.

Data crosses into and out of JSON at a few edges only (the run log, the wire, a
replay file); everywhere else it is a typed dataclass. Where a value really is
free-form JSON (a tool's arguments, a JSON schema), these aliases say so.
"""

from __future__ import annotations

import json
from typing import TypeAlias

JSONScalar: TypeAlias = str | int | float | bool | None
JSON: TypeAlias = JSONScalar | list["JSON"] | dict[str, "JSON"]
#: A JSON object: tool arguments, a JSON schema, a stored record.
JSONObject: TypeAlias = dict[str, JSON]


def canonical_json(value: JSON) -> str:
    """One text for equal JSON values: sorted keys, no spaces, UTF-8 kept."""
    if isinstance(value, dict) and len(value) == 1:  # most calls: one plain string argument
        ((key, item),) = value.items()
        # JSON writes printable text with no quote or backslash as it is (ensure_ascii off)
        if type(item) is str and _as_is(key + item):
            return f'{{"{key}":"{item}"}}'
    return _CANONICAL.encode(value)


def _as_is(text: str) -> bool:
    return text.isprintable() and '"' not in text and "\\" not in text


#: Built once: ``json.dumps`` with options builds an encoder per call (every step digests).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
