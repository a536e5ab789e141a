"""Decoding a request body as JSON, with every way it can be malformed named (SPEC S9).

:func:`json.loads` alone lets through what later code trips over: a list nested 100,000
deep (``RecursionError``), a 5,000-digit integer (``ValueError`` deep in a conversion),
lone surrogates that no encoder takes back, ``NaN``. :func:`decode_json` refuses each of
them with a :class:`BadBody` whose message says which, so a server answers 400, never 500.

    value = decode_json(raw)        # raises BadBody("request body is not valid JSON: ...")
"""

from __future__ import annotations

import json
import math

from tao.state.jsontypes import JSON

__all__ = ["MAX_DEPTH", "BadBody", "decode_json"]

#: Deepest nesting taken; real requests (tools with JSON-schema parameters) stay far below.
MAX_DEPTH = 64
#: Longest run of digits in a number: floats beyond it overflow, integers are nonsense.
_MAX_DIGITS = 400


class BadBody(ValueError):
    """A body that is not the JSON it should be; the message is safe to show."""


def _refuse_constant(name: str) -> JSON:
    raise BadBody(f"request body is not valid JSON: {name} is not a number")


def _parse_int(text: str) -> int:
    if len(text) > _MAX_DIGITS:
        raise BadBody(f"request body holds a {len(text)}-digit number")
    return int(text)


def _parse_float(text: str) -> float:
    if len(text) > _MAX_DIGITS:
        raise BadBody(f"request body holds a {len(text)}-character number")
    value = float(text)
    if not math.isfinite(value):
        raise BadBody(f"request body holds a number out of range: {text}")
    return value


def decode_json(raw: bytes, *, max_depth: int = MAX_DEPTH) -> JSON:
    """The JSON value of a UTF-8 body; :class:`BadBody` for anything malformed."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadBody(f"request body is not UTF-8 (byte {error.start})") from None
    if not text.strip():
        raise BadBody("request body is empty; send a JSON object")
    try:
        value: JSON = json.loads(
            text,
            parse_int=_parse_int,
            parse_float=_parse_float,
            parse_constant=_refuse_constant,
        )
    except RecursionError:
        raise BadBody(f"request body is nested deeper than {max_depth}") from None
    except BadBody:
        raise
    except ValueError as error:
        raise BadBody(f"request body is not valid JSON: {error}") from None
    _check_nodes(value, max_depth)
    return value


def _check_nodes(value: JSON, max_depth: int) -> None:
    """Refuse nesting past ``max_depth`` and lone surrogates (``"\\ud800"``: text that
    cannot be encoded again), in one pass without recursion."""
    stack: list[tuple[JSON, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            _check_text(item)
        elif isinstance(item, list | dict):
            if depth > max_depth:
                raise BadBody(f"request body is nested deeper than {max_depth}")
            if isinstance(item, dict):
                for key in item:
                    _check_text(key)
            inner = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in inner)


def _check_text(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BadBody("request body holds a lone surrogate (\\ud800-\\udfff)") from None
