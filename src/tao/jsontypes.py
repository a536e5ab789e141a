"""The one spelling of "a JSON value" in tao, so that no module needs ``Any`` for it.

Data crosses into and out of JSON at a few edges only (the run log, the wire, a
replay file); everywhere else it is a typed dataclass. Where a value really is
free-form JSON (a tool's arguments, a JSON schema), these aliases say so.
"""

from __future__ import annotations

from typing import TypeAlias

JSONScalar: TypeAlias = str | int | float | bool | None
JSON: TypeAlias = JSONScalar | list["JSON"] | dict[str, "JSON"]
#: A JSON object: tool arguments, a JSON schema, a stored record.
JSONObject: TypeAlias = dict[str, JSON]
