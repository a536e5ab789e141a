"""The calculator parses arithmetic with ast, never eval (SPEC T2, L4)."""

from __future__ import annotations

import contextlib
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tao.errors import ToolError
from tao.tools.calc import calculate, calculator_tool


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("17 * 23 + 4", "395"),
        ("10 / 4", "2.5"),
        ("10 / 2", "5"),
        ("7 // 2", "3"),
        ("7 % 3", "1"),
        ("2 ** 10", "1024"),
        ("-(3 - 5)", "2"),
        ("+4", "4"),
        ("0.1 + 0.2", "0.3"),
        ("1 / 3", "0.333333333333"),
        ("2 ** -2", "0.25"),
        ("sqrt(16) + abs(-2)", "6"),
        ("round(2.567, 2)", "2.57"),
        ("min(3, 1, 2) + max(4, 5)", "6"),
        ("round(pi, 4)", "3.1416"),
        ("12 × 12", "144"),
        ("1_000 * 3", "3000"),
        ("2 ** 100", "1267650600228229401496703205376"),
    ],
)
def test_calculator_evaluates_arithmetic_T2(expression: str, expected: str) -> None:
    assert calculator_tool().invoke({"expression": expression}) == expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("1 / 0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("2 ^ 10", "unsupported operator ^ (use ** for powers)"),
        ("1 < 2", "unsupported syntax: comparison"),
        ("1,000", "unsupported syntax: tuple"),
        ("__import__('os')", "unknown function '__import__'"),
        ("__import__('os').system('true')", "only plain calls"),
        ("(1).real", "unsupported syntax: attribute access"),
        ("x + 1", "unknown name 'x'"),
        ("'a' * 3", "only numbers are allowed"),
        ("True + 1", "only numbers are allowed"),
        ("sqrt(-1)", "sqrt(): math domain error"),
        ("(-8) ** (1/3)", "not a real number"),
        ("1 +", "cannot parse"),
        ("", "empty"),
        ("lambda: 1", "unsupported syntax: lambda"),
    ],
)
def test_calculator_errors_are_clear_T2(expression: str, message: str) -> None:
    with pytest.raises(ToolError, match=re.escape(message)):
        calculate(expression)


@pytest.mark.parametrize(
    "expression",
    ["9**9**9**9", "2 ** 100000", "10 ** 5000", "factorial(100000)", "1e308 * 10", "exp(1000)"],
)
def test_calculator_bounds_resource_use_T2(expression: str) -> None:
    with pytest.raises(ToolError, match=r"too large|finite"):
        calculate(expression)


def test_calculator_deep_nesting_is_an_error_not_a_crash_L4() -> None:
    with pytest.raises(ToolError):
        calculate("(" * 500 + "1" + ")" * 500)
    assert calculate("-" * 900 + "1") == "1"


def test_calculator_never_calls_eval_or_builtins_T2() -> None:
    for attack in ["open('/etc/passwd').read()", "[].__class__", "globals()", "eval('1')"]:
        with pytest.raises(ToolError):
            calculate(attack)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("0123456789.+-*/%()e ^,_jxsqrtpi<=!'\"[]{}"), max_size=40))
def test_calculator_only_raises_tool_error_on_arithmetic_like_text_L4(text: str) -> None:
    with contextlib.suppress(ToolError):
        assert isinstance(calculate(text), str)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_calculator_only_raises_tool_error_on_any_text_L4(text: str) -> None:
    with contextlib.suppress(ToolError):
        calculate(text)
