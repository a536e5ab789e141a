"""``@frozen`` builds the same class as ``@dataclass(frozen=True, slots=True)``, faster."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from typing import Generic, TypeVar

import pytest

from tao.state.frozen import frozen


def _pair(kw_only: bool) -> tuple[type, type]:
    def body() -> dict[str, object]:
        return {
            "__annotations__": {"a": "int", "b": "str", "c": "list[int]", "d": "int"},
            "b": "x",
            "c": dataclasses.field(default_factory=list),
            "d": dataclasses.field(default=7, init=False),
        }

    fast = frozen(kw_only=kw_only)(type("Fast", (), body()))
    slow = dataclasses.dataclass(frozen=True, slots=True, kw_only=kw_only)(type("Slow", (), body()))
    return fast, slow


def _shape(cls: type) -> list[tuple[str, object, object, str]]:
    """Each parameter's name, kind, annotation and default (a factory's by its repr)."""
    return [
        (p.name, p.kind, p.annotation, repr(p.default))
        for p in inspect.signature(cls).parameters.values()
    ]


@pytest.mark.parametrize("kw_only", [False, True])
def test_same_signature_defaults_and_factories(kw_only: bool) -> None:
    fast, slow = _pair(kw_only)
    assert _shape(fast) == _shape(slow)
    one, two = fast(a=1), fast(a=1)
    assert (one.a, one.b, one.c, one.d) == (1, "x", [], 7)
    assert one.c is not two.c  # a fresh list each time, as default_factory promises
    assert one == two and hash(fast(a=1, c=())) == hash(fast(a=1, c=()))
    assert dataclasses.replace(one, b="y") == fast(a=1, b="y")
    assert dataclasses.asdict(one) == dataclasses.asdict(slow(a=1))
    with pytest.raises(TypeError):
        fast()  # a is required
    with pytest.raises(TypeError):
        fast(a=1, d=3)  # d is not an __init__ parameter
    if kw_only:
        with pytest.raises(TypeError):
            fast(1)


def test_still_frozen_and_slotted() -> None:
    fast, _ = _pair(False)
    value = fast(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        value.a = 2  # type: ignore[misc]
    assert not hasattr(value, "__dict__")


def test_post_init_runs() -> None:
    @frozen
    class Checked:
        n: int

        def __post_init__(self) -> None:
            if self.n < 0:
                raise ValueError("negative")

    assert Checked(1).n == 1
    with pytest.raises(ValueError, match="negative"):
        Checked(-1)


@frozen(kw_only=True)
class Pickled:
    a: int
    b: tuple[int, ...] = ()


def test_pickles() -> None:
    value = Pickled(a=1, b=(2,))
    assert pickle.loads(pickle.dumps(value)) == value


def test_copies_are_equal_and_frozen() -> None:
    value = Pickled(a=1, b=(2,))
    for twin in (copy.copy(value), copy.deepcopy(value)):
        assert twin == value and type(twin) is Pickled
        with pytest.raises(dataclasses.FrozenInstanceError):
            twin.a = 2  # type: ignore[misc]


def test_an_instance_is_of_the_frozen_class_only() -> None:
    """It is built in a mutable twin; nothing of the twin may show once it is made."""
    value = Pickled(a=1)
    assert type(value) is Pickled and value.__class__ is Pickled
    assert [c.__name__ for c in type(value).__mro__] == ["Pickled", "object"]


T = TypeVar("T")


@frozen
class Box(Generic[T]):
    item: T


def test_generic_classes() -> None:
    box = Box(3)
    assert box.item == 3 and type(box) is Box
    with pytest.raises(dataclasses.FrozenInstanceError):
        box.item = 4  # type: ignore[misc]


def test_cannot_be_subclassed() -> None:
    """A subclass's layout differs from the builder's: refused when the class is made."""
    with pytest.raises(TypeError, match="cannot be subclassed"):

        class Wider(Pickled):
            c: int = 0
