"""The one way typed run state becomes JSON and back: a dataclass codec.

Every record tao stores or prints (:class:`~tao.state.config.RunConfig`, the checkpoint,
steps, results, the run log's summaries, an eval's results lines) is a dataclass, and its
JSON follows from its fields' types: :func:`encode` writes one, :func:`decode` reads one
back. A class says only how its JSON differs from its fields, once, with :func:`shape`
(a key renamed, a field left out when ``None``, the key order, a computed key, a record's
schema version and the upgrades of older ones, kept in :mod:`tao.state.migrations`).

    encode(config)                      # {"model": "local", "tools": [...], ...}
    decode(RunConfig, data)             # unknown keys ignored; a wrong type is a ShapeError

Reading is strict about types and lenient about presence: a key a newer tao added is
ignored, a missing one takes the field's default, and a value of the wrong type is a
:class:`ShapeError` naming the field (``steps must be an integer, not 'three'``), which
each record's ``from_json`` turns into its own error. Each class's encoder is generated
once, on first use, as straight-line code (``{"step": obj.step, ...}``): the run log
encodes a checkpoint on every step, and a loop over fields would cost several times more.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from tao.errors import InternalError
from tao.state.jsontypes import JSON, JSONObject

T = TypeVar("T")

#: Upgrades a stored record's JSON from one schema version to the next.
Upgrade = Callable[[JSONObject], JSONObject]


class ShapeError(ValueError):
    """Stored JSON that does not have its record's shape; the message names the field."""


class NewerVersionError(ShapeError):
    """A record written by a newer tao (its schema version is above this tao's)."""


@dataclass(frozen=True, slots=True)
class FieldCodec:
    """A field whose JSON its type does not say (a delta-encoded list of steps)."""

    encode: Callable[[Any], JSON]
    decode: Callable[[JSON, str], object]


@dataclass(frozen=True, slots=True, kw_only=True)
class Shape:
    """How a class's JSON differs from its fields; see :func:`shape`."""

    keys: tuple[str, ...] | None = None
    omit_default: frozenset[str] = frozenset()
    rename: Mapping[str, str] = field(default_factory=dict)
    computed: tuple[str, ...] = ()
    custom: Mapping[str, FieldCodec] = field(default_factory=dict)
    null_is_default: bool = False
    version_key: str | None = None
    version: int = 0
    upgrades: Mapping[int, Upgrade] = field(default_factory=dict)
    missing: Mapping[str, JSON] = field(default_factory=dict)


_SHAPES: dict[type, Shape] = {}
_ENCODERS: dict[type, Callable[[Any], JSONObject]] = {}
_DECODERS: dict[type, Callable[[Mapping[str, JSON], str], Any]] = {}


def shape(
    cls: type,
    *,
    keys: tuple[str, ...] | None = None,
    omit_default: tuple[str, ...] = (),
    rename: Mapping[str, str] | None = None,
    computed: tuple[str, ...] = (),
    custom: Mapping[str, FieldCodec] | None = None,
    null_is_default: bool = False,
    version_key: str | None = None,
    version: int = 0,
    upgrades: Mapping[int, Upgrade] | None = None,
    missing: Mapping[str, JSON] | None = None,
) -> None:
    """Say how ``cls``'s JSON differs from its fields (call it once, beside the class).

    ``keys``: the JSON's keys in order (fields and ``computed`` properties); a field not
    named is not stored. Default: every field in order, then ``computed``.
    ``omit_default``: fields left out while they hold their (plain) default, so a record
    that does not use a newer field reads as it did before the field existed; they come
    last in the keys. ``rename``: field -> JSON key.
    ``custom``: fields with their own :class:`FieldCodec`.
    ``null_is_default``: ``null`` for a field that is not optional reads as its default.
    ``version_key``/``version``/``upgrades``: the key holding the record's schema version
    (absent: 0), this tao's version, and for each older version the upgrade to the next.
    ``missing``: what a key absent from stored JSON reads as, where that is not the
    field's default (a record written before the field existed).
    """
    if cls in _ENCODERS or cls in _DECODERS:
        raise InternalError(f"{cls.__name__}'s JSON shape was given after it was used")
    if version_key is not None and set(upgrades or {}) != set(range(version)):
        raise InternalError(f"{cls.__name__}: an upgrade for each version below {version}")
    _SHAPES[cls] = Shape(
        keys=keys,
        omit_default=frozenset(omit_default),
        rename=rename or {},
        computed=computed,
        custom=custom or {},
        null_is_default=null_is_default,
        version_key=version_key,
        version=version,
        upgrades=upgrades or {},
        missing=missing or {},
    )


def encode(obj: object) -> JSONObject:
    """``obj`` (a dataclass instance) as a JSON object."""
    try:
        return _ENCODERS[type(obj)](obj)
    except KeyError:
        if type(obj) in _ENCODERS:
            raise
    return _encoder(type(obj))(obj)


def decode(cls: type[T], data: JSON, what: str = "") -> T:
    """Read ``cls`` from ``data``: unknown keys are ignored, absent ones take their default,
    older schema versions are upgraded; a wrong shape is a :class:`ShapeError`.
    ``what`` prefixes the field names in messages (``eval_tag.gold``)."""
    if not isinstance(data, dict):
        raise ShapeError(f"{what or cls.__name__} must be an object, not {_short(data)}")
    decoder = _DECODERS.get(cls)
    if decoder is None:
        decoder = _decoder(cls)
    return cast(T, decoder(data, what))


# -- encoding ---------------------------------------------------------------------------------


def _encoder(cls: type) -> Callable[[Any], JSONObject]:
    """Generate ``cls``'s encoder: one dict display of its keys, no loop, no lookups."""
    rules = _SHAPES.get(cls, Shape())
    hints = typing.get_type_hints(cls, localns={"JSON": JSON})
    names = [f.name for f in dataclasses.fields(cls)]
    keys = rules.keys if rules.keys is not None else (*names, *rules.computed)
    namespace: dict[str, object] = {}
    items: list[str] = []
    optional: list[str] = []
    for key in keys:
        name = key
        if key in rules.custom:
            namespace[f"_c_{key}"] = rules.custom[key].encode
            value = f"_c_{key}(obj.{key})"
        elif key in names:
            value = _encode_expression(f"obj.{key}", hints[key], namespace, key)
        elif key in rules.computed:
            value = f"obj.{key}"
        else:
            raise InternalError(f"{cls.__name__}: {key!r} is no field or computed key")
        out = rules.rename.get(name, name)
        if key in rules.omit_default:
            default = _plain_default(cls, key)
            namespace[f"_d_{key}"] = default
            test = "is not" if default is None else "!="
            optional.append(f"    if obj.{key} {test} _d_{key}:\n        data[{out!r}] = {value}")
        elif optional:
            raise InternalError(f"{cls.__name__}: {key!r} comes after a key left out by default")
        else:
            items.append(f"{out!r}: {value}")
    body = ["def encode(obj):", f"    data = {{{', '.join(items)}}}", *optional, "    return data"]
    exec("\n".join(body), namespace)  # noqa: S102 (field names only, as dataclasses does)
    made = cast(Callable[[Any], JSONObject], namespace["encode"])
    _ENCODERS[cls] = made
    return made


def _plain_default(cls: type, name: str) -> object:
    """The default of ``cls``'s field ``name`` (or what its factory makes), which
    :func:`shape`'s ``omit_default`` needs."""
    for f in dataclasses.fields(cls):
        if f.name == name and f.default is not dataclasses.MISSING:
            return f.default
        if f.name == name and f.default_factory is not dataclasses.MISSING:
            return f.default_factory()  # an empty mapping or list, compared with ``!=``
    raise InternalError(f"{cls.__name__}.{name} is left out by default but has no plain default")


def _encode_expression(value: str, hint: object, namespace: dict[str, object], key: str) -> str:
    """The Python expression that turns ``value`` (of type ``hint``) into JSON."""
    if _is_json(hint):
        return value
    inner, optional = _unoptional(hint)
    made = _made(value, inner, namespace, key)
    return f"(None if {value} is None else {made})" if optional and made != value else made


def _made(value: str, inner: object, namespace: dict[str, object], key: str) -> str:
    """:func:`_encode_expression` for a value that is not ``None``."""
    origin = typing.get_origin(inner)
    if isinstance(inner, type) and dataclasses.is_dataclass(inner):
        namespace[f"_e_{key}"] = _ENCODERS.get(inner) or _encoder(inner)
        return f"_e_{key}({value})"
    if isinstance(inner, type) and issubclass(inner, enum.Enum):
        return f"{value}.value"
    if origin in (tuple, list, typing.Sequence, _abc_sequence()):
        (item,) = {a for a in typing.get_args(inner) if a is not Ellipsis}
        if isinstance(item, type) and dataclasses.is_dataclass(item):
            namespace[f"_e_{key}"] = _ENCODERS.get(item) or _encoder(item)
            return f"([_e_{key}(v) for v in {value}] if {value} else [])"
        if typing.is_typeddict(item):
            return f"([dict(v) for v in {value}] if {value} else [])"
        return f"list({value})"
    if origin in (dict, Mapping, _abc_mapping()):
        item = typing.get_args(inner)[1]
        if isinstance(item, type) and dataclasses.is_dataclass(item):
            namespace[f"_e_{key}"] = _ENCODERS.get(item) or _encoder(item)
            return f"({{k: _e_{key}(v) for k, v in {value}.items()}} if {value} else {{}})"
        return f"dict({value})"
    return value  # str, int, float, bool, a Literal, JSON: as it is


# -- decoding ---------------------------------------------------------------------------------

#: Reads one stored value: the value and its field's path for messages.
Read = Callable[[JSON, str], object]


def _decoder(cls: type) -> Callable[[Mapping[str, JSON], str], Any]:
    rules = _SHAPES.get(cls, Shape())
    hints = typing.get_type_hints(cls, localns={"JSON": JSON})
    fields: list[tuple[str, str, Read, bool, bool]] = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        keys = rules.keys if rules.keys is not None else None
        if keys is not None and f.name not in keys:
            continue  # not stored: the constructor's default
        read = rules.custom[f.name].decode if f.name in rules.custom else _reader(hints[f.name])
        has_default = f.default is not dataclasses.MISSING or (
            f.default_factory is not dataclasses.MISSING
        )
        optional = _unoptional(hints[f.name])[1]
        fields.append((f.name, rules.rename.get(f.name, f.name), read, has_default, optional))

    def decode_one(data: Mapping[str, JSON], what: str) -> Any:
        if rules.version_key is not None:
            data = _upgraded(cls, rules, data)
        values: dict[str, object] = {}
        for name, key, read, has_default, optional in fields:
            path = f"{what}.{name}" if what else name
            if key in data:
                value = data[key]
                if value is None and not optional and has_default and rules.null_is_default:
                    continue
                values[name] = read(value, path)
            elif key in rules.missing:
                values[name] = read(rules.missing[key], path)
            elif not has_default:
                raise ShapeError(f"{path} is missing")
        try:
            return cls(**values)
        except (TypeError, ValueError) as error:
            raise ShapeError(str(error)) from None

    _DECODERS[cls] = decode_one
    return decode_one


def _upgraded(cls: type, rules: Shape, data: Mapping[str, JSON]) -> Mapping[str, JSON]:
    """``data`` brought to this tao's schema version by the upgrades in between."""
    key = cast(str, rules.version_key)
    version = data.get(key, 0)
    if isinstance(version, bool) or not isinstance(version, int) or version > rules.version:
        raise NewerVersionError(
            f"schema version {version!r} is newer than this tao ({rules.version})"
        )
    upgraded = dict(data)
    for step in range(version, rules.version):
        upgraded = rules.upgrades[step](upgraded)
    upgraded[key] = rules.version
    return upgraded


def _reader(hint: object) -> Read:
    """A function that reads a stored value of type ``hint``, or says why it cannot."""
    if _is_json(hint):
        return _required_reader(hint)
    inner, optional = _unoptional(hint)
    read = _required_reader(inner)
    if not optional:
        return read

    def read_optional(value: JSON, path: str) -> object:
        return None if value is None else read(value, path)

    return read_optional


def _required_reader(hint: object) -> Read:
    if _is_json(hint) or hint is object or hint is typing.Any:
        return lambda value, path: value
    origin = typing.get_origin(hint)
    json_object = origin is dict and _is_json(typing.get_args(hint)[1])
    if json_object or typing.is_typeddict(hint):
        return _check(dict, "an object")
    if hint in _SCALARS:
        return _SCALARS[hint]
    if origin is typing.Literal:
        return _literal(typing.get_args(hint))
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _member(hint)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        cls = hint
        return lambda value, path: decode(cls, value, path)
    if origin in (tuple, list, typing.Sequence, _abc_sequence()):
        (item,) = {a for a in typing.get_args(hint) if a is not Ellipsis}
        return _sequence(_reader(item), tuple if origin is not list else list)
    if origin in (dict, Mapping, _abc_mapping()):
        return _mapping(_reader(typing.get_args(hint)[1]))
    if origin in (typing.Union, types.UnionType):  # bool | str, a decision
        return _union([_reader(arg) for arg in typing.get_args(hint)], hint)
    raise InternalError(f"the codec cannot read {hint!r}")


def _check(kind: type, said: str) -> Read:
    """A reader that takes a value of ``kind`` as it is (``bool`` is no number here)."""

    def read(value: JSON, path: str) -> object:
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise ShapeError(f"{path} must be {said}, not {_short(value)}")
        return value

    return read


def _integer(value: JSON, path: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise ShapeError(f"{path} must be an integer, not {_short(value)}")


def _number(value: JSON, path: str) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise ShapeError(f"{path} must be a number, not {_short(value)}")


_SCALARS: dict[object, Read] = {
    bool: _check(bool, "true or false"),
    int: _integer,
    float: _number,
    str: _check(str, "a string"),
}


def _literal(choices: tuple[object, ...]) -> Read:
    def read(value: JSON, path: str) -> object:
        if value not in choices:
            listed = ", ".join(map(str, choices))
            raise ShapeError(f"{path} must be one of {listed}, not {_short(value)}")
        return value

    return read


def _member(kind: type[enum.Enum]) -> Read:
    def read(value: JSON, path: str) -> object:
        try:
            return kind(value)
        except ValueError:
            raise ShapeError(f"{path} is not a known {kind.__name__}: {_short(value)}") from None

    return read


def _sequence(item: Read, made: type) -> Read:
    def read(value: JSON, path: str) -> object:
        if not isinstance(value, list):
            raise ShapeError(f"{path} must be a list, not {_short(value)}")
        return made(item(v, f"{path}[{i}]") for i, v in enumerate(value))

    return read


def _mapping(item: Read) -> Read:
    def read(value: JSON, path: str) -> object:
        if not isinstance(value, dict):
            raise ShapeError(f"{path} must be an object, not {_short(value)}")
        return {k: item(v, f"{path}.{k}") for k, v in value.items()}

    return read


def _union(readers: list[Read], hint: object) -> Read:
    def read(value: JSON, path: str) -> object:
        for one in readers:
            try:
                return one(value, path)
            except ShapeError:
                continue
        raise ShapeError(f"{path} must be {hint}, not {_short(value)}")

    return read


def _is_json(hint: object) -> bool:
    """Whether ``hint`` is :data:`~tao.state.jsontypes.JSON` (free-form: kept as it is)."""
    if hint == JSON:
        return True
    if typing.get_origin(hint) not in (typing.Union, types.UnionType):
        return False
    args = typing.get_args(hint)
    plain = {a for a in args if isinstance(a, type)}
    nested = {typing.get_origin(a) for a in args} - {None}
    return plain >= {str, int, float, bool, type(None)} and nested == {list, dict}


def _unoptional(hint: object) -> tuple[object, bool]:
    """``X`` and whether ``None`` is allowed, for ``X | None``."""
    if typing.get_origin(hint) not in (typing.Union, types.UnionType):
        return hint, False
    args = typing.get_args(hint)
    if type(None) not in args:
        return hint, False
    rest = tuple(a for a in args if a is not type(None))
    if len(rest) == 1:
        return rest[0], True
    return typing.Union[rest], True  # noqa: UP007 (built from a tuple)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _abc_sequence() -> object:
    import collections.abc

    return collections.abc.Sequence


def _abc_mapping() -> object:
    import collections.abc

    return collections.abc.Mapping
