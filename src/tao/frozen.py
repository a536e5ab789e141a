"""Frozen, slotted dataclasses that are cheap to build: the loop makes several every step.

A frozen dataclass's generated ``__init__`` sets each field through
``object.__setattr__`` (its own ``__setattr__`` refuses), which costs several times
a plain assignment. The loop builds a :class:`tao.trace.Step` (18 fields), a
``ModelRequest``, a ``Checkpoint``, an ``Outcome``… on every step, and those
``__init__`` calls were a fifth of tao's per-step overhead (``bench/overhead.py``).
:func:`frozen` makes the same class as ``@dataclass(frozen=True, slots=True)`` and
then gives it an ``__init__`` that writes each slot through its descriptor: the same
signature, defaults, factories and ``__post_init__``, still frozen afterwards
(``tests/test_frozen.py`` holds the two to the same behaviour).

    @frozen(kw_only=True)
    class Usage:
        model_calls: int = 0
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from types import FunctionType
from typing import TypeVar, dataclass_transform, overload

T = TypeVar("T")


@overload
def frozen(cls: type[T], /) -> type[T]: ...
@overload
def frozen(*, kw_only: bool = False) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(frozen_default=True)
def frozen(
    cls: type[T] | None = None, /, *, kw_only: bool = False
) -> type[T] | Callable[[type[T]], type[T]]:
    """``@dataclass(frozen=True, slots=True, kw_only=...)`` with a fast ``__init__``."""

    def wrap(cls: type[T]) -> type[T]:
        made = dataclasses.dataclass(frozen=True, slots=True, kw_only=kw_only)(cls)
        made.__init__ = _fast_init(made)  # type: ignore[method-assign]
        return made

    return wrap if cls is None else wrap(cls)


class _Factory:
    """The default of a parameter whose field has a ``default_factory`` (as dataclasses)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def _fast_init(cls: type) -> Callable[..., None]:
    """An ``__init__`` equal to the dataclass's, setting slots through their descriptors."""
    if any("InitVar" in str(f.type) for f in getattr(cls, "__dataclass_fields__", {}).values()):
        raise TypeError(f"{cls.__name__}: InitVar fields are not supported by @frozen")
    namespace: dict[str, object] = {"_FACTORY": _FACTORY}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for field in dataclasses.fields(cls):
        name = field.name
        namespace[f"_set_{name}"] = cls.__dict__[name].__set__
        value = name
        if field.default is not dataclasses.MISSING:
            namespace[f"_default_{name}"] = field.default
            default = f"=_default_{name}"
            value = name if field.init else f"_default_{name}"
        elif field.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{name}"] = field.default_factory
            default = "=_FACTORY"
            value = (
                f"_factory_{name}() if {name} is _FACTORY else {name}"
                if field.init
                else f"_factory_{name}()"
            )
        else:
            default = ""
        if field.init:
            (keyword if field.kw_only else positional).append(f"{name}{default}")
            body.append(f"    _set_{name}(self, {value})")
        elif value != name:
            body.append(f"    _set_{name}(self, {value})")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    params = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    source = f"def __init__({params}):\n" + ("\n".join(body) or "    pass") + "\n"
    exec(source, namespace)  # noqa: S102 (field names only, as dataclasses itself does)
    init = namespace["__init__"]
    assert isinstance(init, FunctionType)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = {
        **{field.name: field.type for field in dataclasses.fields(cls) if field.init},
        "return": None,
    }
    return init
