"""Frozen, slotted dataclasses that are cheap to build: the loop makes several every step.

A frozen dataclass refuses ``obj.x = …`` by overriding ``__setattr__``, so its
generated ``__init__`` must set each field through ``object.__setattr__``, and that
override also stops CPython from turning an attribute store into a direct slot write.
The loop builds a :class:`tao.state.result.Step` (18 fields), a ``ModelRequest``, a
``Checkpoint``, an ``Outcome``… on every step; built that way they were a fifth of
tao's per-step overhead (``bench/overhead.py``).

:func:`frozen` makes the same class as ``@dataclass(frozen=True, slots=True)``, and
builds its instances in a *builder*: a plain class with the very same slots and no
``__setattr__``, whose stores are plain slot writes. Once every field is set the
instance's ``__class__`` becomes the frozen class (the layouts are identical, so
CPython allows it), and from then on it is frozen. The constructor (``__new__``) has
the dataclass's signature, defaults, factories and ``__post_init__``
(``tests/test_frozen.py`` holds the two to the same behaviour); instances pickle and
copy as dataclasses do. A ``@frozen`` class cannot be subclassed: its builder could
not mirror the subclass's layout.

    @frozen(kw_only=True)
    class Usage:
        model_calls: int = 0
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable
from types import FunctionType
from typing import TypeVar, cast, dataclass_transform, overload

T = TypeVar("T")


@overload
def frozen(cls: type[T], /) -> type[T]: ...
@overload
def frozen(*, kw_only: bool = False) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(frozen_default=True)
def frozen(
    cls: type[T] | None = None, /, *, kw_only: bool = False
) -> type[T] | Callable[[type[T]], type[T]]:
    """``@dataclass(frozen=True, slots=True, kw_only=...)``, built faster."""

    def wrap(cls: type[T]) -> type[T]:
        made = dataclasses.dataclass(frozen=True, slots=True, kw_only=kw_only)(cls)
        made_by = {
            "__new__": _new(made, _builder(made)),
            "__reduce__": _reduce,
            "__init_subclass__": classmethod(_final),
        }
        for name, method in made_by.items():
            setattr(made, name, method)
        del made.__init__  # object's: it ignores the arguments __new__ took
        return made

    return wrap if cls is None else wrap(cls)


class _Factory:
    """The default of a parameter whose field has a ``default_factory`` (as dataclasses)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def _builder(cls: type) -> type:
    """A mutable class with ``cls``'s exact layout, that an instance can leave for ``cls``."""
    if any("__setattr__" in vars(base) for base in cls.__mro__[1:-1]):
        raise TypeError(f"@frozen {cls.__name__}: its bases must not define __setattr__")
    bases = getattr(cls, "__orig_bases__", cls.__bases__)  # Generic[T] for a generic class
    slots = {"__slots__": vars(cls)["__slots__"]}
    name = f"{cls.__name__}Builder"
    builder = types.new_class(name, bases, exec_body=lambda namespace: namespace.update(slots))
    probe: object = object.__new__(builder)
    probe.__class__ = cls  # raises TypeError here, at import, if the layouts differ
    return builder


def _new(cls: type, builder: type) -> Callable[..., object]:
    """A ``__new__`` with the dataclass ``__init__``'s signature that fills a builder."""
    if any("InitVar" in str(f.type) for f in dataclasses.fields(cls)):
        raise TypeError(f"{cls.__name__}: InitVar fields are not supported by @frozen")
    namespace: dict[str, object] = {
        "_FACTORY": _FACTORY,
        "_cls": cls,
        "_builder": builder,
        "_object_new": object.__new__,
    }
    positional: list[str] = []
    keyword: list[str] = []
    body = ["    self = _object_new(_builder)"]
    for field in dataclasses.fields(cls):
        name, value, default = field.name, field.name, ""
        if field.default is not dataclasses.MISSING:
            namespace[f"_default_{name}"] = field.default
            default = f"=_default_{name}"
            value = name if field.init else f"_default_{name}"
        elif field.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{name}"] = field.default_factory
            default = "=_FACTORY"
            call = f"_factory_{name}()"
            value = f"{call} if {name} is _FACTORY else {name}" if field.init else call
        if field.init:
            (keyword if field.kw_only else positional).append(f"{name}{default}")
        if field.init or value != name:
            body.append(f"    self.{name} = {value}")
    body.append("    self.__class__ = _cls")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    body.append("    return self")
    params = ", ".join(["cls", *positional, *(["*", *keyword] if keyword else [])])
    source = f"def __new__({params}):\n" + "\n".join(body) + "\n"
    exec(source, namespace)  # noqa: S102 (field names only, as dataclasses itself does)
    new = cast(FunctionType, namespace["__new__"])  # the def just executed
    new.__qualname__ = f"{cls.__qualname__}.__new__"
    new.__annotations__ = {
        **{field.name: field.type for field in dataclasses.fields(cls) if field.init},
        "return": cls.__name__,
    }
    return new


def _reduce(self: object) -> tuple[object, ...]:
    """Pickle and copy as a dataclass: a blank instance, then its state (its own
    ``__setstate__``), as ``__new__`` needs the fields themselves."""
    state = [getattr(self, field.name) for field in dataclasses.fields(self)]  # type: ignore[arg-type]
    return (_blank, (type(self),), state)


def _blank(cls: type[T]) -> T:
    return object.__new__(cls)


def _final(cls: type) -> None:
    raise TypeError(f"{cls.__mro__[1].__name__} is @frozen and cannot be subclassed")
