"""Arguments pydantic would return unchanged skip it; everything else is still its to judge (T1)."""

from __future__ import annotations

from typing import Annotated

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, field_validator

from tao import ToolError, tool
from tao.tools.base import Tool
from tao.tools.params import as_given, exact_types


@tool
def plain(text: str, count: int = 1, scale: float = 1.0, loud: bool = False) -> str:
    """A tool with one parameter of each type the fast path knows."""
    return text * count


_VALUES = st.one_of(
    st.text(),
    st.integers(),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=2),
)


@given(
    st.dictionaries(
        st.sampled_from(["text", "count", "scale", "loud", "other"]), _VALUES, max_size=5
    )
)
def test_the_fast_path_agrees_with_pydantic_on_any_arguments_T1(
    arguments: dict[str, object],
) -> None:
    try:
        model = plain.params.model_validate(arguments)
    except Exception:
        with pytest.raises(ToolError):
            plain.validate(arguments)
        return
    expected = {name: getattr(model, name) for name in plain.param_names}
    got = plain.validate(arguments)
    assert got == expected
    assert [type(value) for value in got.values()] == [type(v) for v in expected.values()]
    assert list(got) == list(plain.param_names)  # in the parameters' order, as pydantic's


def test_exact_values_skip_pydantic_and_conversions_do_not() -> None:
    exact = {"loud": True, "scale": 2.5, "count": 3, "text": "a"}
    assert as_given(plain.params, exact) == {"text": "a", "count": 3, "scale": 2.5, "loud": True}
    assert as_given(plain.params, {**exact, "count": "3"}) is None  # pydantic converts "3"
    assert as_given(plain.params, {**exact, "scale": 2}) is None  # an int for a float
    assert as_given(plain.params, {**exact, "count": True}) is None  # a bool is not an int here
    assert as_given(plain.params, {"text": "a"}) is None  # defaults are pydantic's to fill
    assert plain.validate({"text": "a", "count": "3"})["count"] == 3


class _Stripped(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)
    text: str


class _Checked(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str

    @field_validator("text")
    @classmethod
    def _no_secrets(cls, value: str) -> str:
        if "secret" in value:
            raise ValueError("no secrets")
        return value


def test_models_that_transform_or_check_values_always_go_through_pydantic() -> None:
    @tool
    def short(text: Annotated[str, Field(max_length=3)]) -> str:
        """Only short texts."""
        return text

    assert exact_types(short.params) is None
    with pytest.raises(ToolError, match="at most 3 characters"):
        short.validate({"text": "too long"})
    for model, arguments, expected in [
        (_Stripped, {"text": "  padded "}, "padded"),
        (_Checked, {"text": "fine"}, "fine"),
    ]:
        assert exact_types(model) is None
        custom = Tool(
            name="custom", description="", fn=lambda text: text, params=model, param_names=("text",)
        )
        assert custom.validate(arguments) == {"text": expected}
    checked = Tool(
        name="checked", description="", fn=lambda text: text, params=_Checked, param_names=("text",)
    )
    with pytest.raises(ToolError, match="no secrets"):
        checked.validate({"text": "a secret"})
