"""The ``calc`` tool set: a ``calculator`` that parses arithmetic, never ``eval`` (SPEC T2).

The expression is parsed with :mod:`ast` and walked node by node: numbers,
``+ - * / // % **``, unary signs, parentheses, a few math functions and
constants. Everything else is refused by name (``unsupported syntax:
comparison``). Sizes are bounded so ``9**9**9**9`` is an error, not a hung run.

    calculator_tool().invoke({"expression": "17 * 23 + 4"})   # '395'
"""

from __future__ import annotations

import ast
import math
import operator
import warnings
from collections.abc import Callable

from tao.errors import ToolError
from tao.tools.base import Tool, make_tool

Number = int | float

MAX_EXPRESSION_CHARS = 1_000
#: Integers beyond about 10**1000 are refused, so no step can eat the CPU or memory.
MAX_INT_BITS = 3_400
MAX_FACTORIAL = 450
#: ``round(x, n)`` computes ``10**abs(n)``: ``round(1, -10**8)`` would run for minutes.
MAX_ROUND_DIGITS = 1_000
#: Exponents beyond this are refused before any work, whatever the base.
MAX_EXPONENT = 100_000

_BINARY: dict[type[ast.operator], tuple[str, Callable[[Number, Number], Number]]] = {
    ast.Add: ("+", operator.add),
    ast.Sub: ("-", operator.sub),
    ast.Mult: ("*", operator.mul),
    ast.Div: ("/", operator.truediv),
    ast.FloorDiv: ("//", operator.floordiv),
    ast.Mod: ("%", operator.mod),
    ast.Pow: ("**", operator.pow),
}

_UNSUPPORTED_OPERATORS: dict[type[ast.operator], str] = {
    ast.BitXor: "^ (use ** for powers)",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.MatMult: "@",
}

_NODE_NAMES: dict[type[ast.AST], str] = {
    ast.Compare: "comparison",
    ast.BoolOp: "and/or",
    ast.Tuple: "tuple (a comma outside a function call; write 1000, not 1,000)",
    ast.List: "list",
    ast.Set: "set",
    ast.Dict: "dict",
    ast.Attribute: "attribute access",
    ast.Subscript: "indexing",
    ast.Lambda: "lambda",
    ast.IfExp: "if/else",
    ast.NamedExpr: "assignment",
    ast.JoinedStr: "f-string",
    ast.Starred: "*unpacking",
}


def _factorial(n: Number) -> int:
    if isinstance(n, float):
        if not n.is_integer():
            raise ValueError("factorial needs a whole number")
        n = int(n)
    if n > MAX_FACTORIAL:
        raise ToolError(f"factorial of a number above {MAX_FACTORIAL} is too large")
    return math.factorial(n)


def _round(x: Number, digits: Number | None = None) -> Number:
    if digits is None:
        return round(x)
    if isinstance(digits, float) and not digits.is_integer():
        raise ToolError("round(): the number of digits must be a whole number")
    if abs(digits) > MAX_ROUND_DIGITS:
        raise ToolError(f"round(): at most {MAX_ROUND_DIGITS} digits either side of the point")
    return round(x, int(digits))


FUNCTIONS: dict[str, Callable[..., Number]] = {
    "abs": abs,
    "round": _round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "floor": math.floor,
    "ceil": math.ceil,
    "exp": math.exp,
    "log": math.log,
    "log10": math.log10,
    "log2": math.log2,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "asin": math.asin,
    "acos": math.acos,
    "atan": math.atan,
    "factorial": _factorial,
}
CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau}

_ALIASES = str.maketrans({"×": "*", "÷": "/", "−": "-", "–": "-"})


def _check_size(value: Number) -> Number:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        if value.bit_length() > MAX_INT_BITS:
            raise ToolError("the result is too large (more than about 1000 digits)")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ToolError("the result is not a finite number (overflow)")
        return value
    raise ToolError("the result is not a real number")


def _power(base: Number, exponent: Number) -> Number:
    """``base ** exponent``, refused *before* the work when the result could not be small."""
    if abs(exponent) > MAX_EXPONENT and abs(base) not in (0, 1):
        raise ToolError(f"the exponent is too large (limit {MAX_EXPONENT:,})")
    if (
        isinstance(base, int)
        and isinstance(exponent, int)
        and exponent > 0
        and abs(base) > 1
        and exponent * math.log2(abs(base)) > MAX_INT_BITS
    ):
        raise ToolError("the result is too large (more than about 1000 digits)")
    result = base**exponent
    if isinstance(result, complex):
        raise ToolError("the result is not a real number (a negative number to a fractional power)")
    return result


class _Evaluator:
    def visit(self, node: ast.AST) -> Number:
        if isinstance(node, ast.Expression):
            return self.visit(node.body)
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ToolError(f"unsupported value {value!r}: only numbers are allowed")
            return _check_size(value)
        if isinstance(node, ast.BinOp):
            return self._binary(node)
        if isinstance(node, ast.UnaryOp):
            operand = self.visit(node.operand)
            if isinstance(node.op, ast.USub):
                return -operand
            if isinstance(node.op, ast.UAdd):
                return +operand
            raise ToolError(f"unsupported operator {type(node.op).__name__}")
        if isinstance(node, ast.Name):
            if node.id in CONSTANTS:
                return CONSTANTS[node.id]
            raise ToolError(f"unknown name {node.id!r}; constants: {', '.join(CONSTANTS)}")
        if isinstance(node, ast.Call):
            return self._call(node)
        name = _NODE_NAMES.get(type(node), type(node).__name__)
        raise ToolError(f"unsupported syntax: {name}")

    def _binary(self, node: ast.BinOp) -> Number:
        op_type = type(node.op)
        if op_type not in _BINARY:
            symbol = _UNSUPPORTED_OPERATORS.get(op_type, op_type.__name__)
            raise ToolError(f"unsupported operator {symbol}")
        symbol, fn = _BINARY[op_type]
        left, right = self.visit(node.left), self.visit(node.right)
        try:
            result = _power(left, right) if symbol == "**" else fn(left, right)
        except ZeroDivisionError:
            raise ToolError("division by zero") from None
        except OverflowError:
            raise ToolError("the result is too large") from None
        return _check_size(result)

    def _call(self, node: ast.Call) -> Number:
        if not isinstance(node.func, ast.Name):
            raise ToolError("unsupported syntax: only plain calls like sqrt(2) are allowed")
        if node.func.id not in FUNCTIONS:
            names = ", ".join(FUNCTIONS)
            raise ToolError(f"unknown function {node.func.id!r}; functions: {names}")
        if node.keywords:
            raise ToolError(f"{node.func.id}() takes no keyword arguments")
        args = [self.visit(arg) for arg in node.args]
        try:
            result = FUNCTIONS[node.func.id](*args)
        except ZeroDivisionError:
            raise ToolError("division by zero") from None
        except OverflowError:
            raise ToolError(f"{node.func.id}(): the result is too large") from None
        except (ValueError, TypeError) as error:
            raise ToolError(f"{node.func.id}(): {error}") from None
        return _check_size(result)


def format_number(value: Number) -> str:
    """``395`` rather than ``395.0``; floats to 12 significant digits (``0.3``, not 0.300...04)."""
    if isinstance(value, int):
        return str(value)
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    text = f"{value:.12g}"
    return "0" if text == "-0" else text


def _short(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")


def calculate(expression: str) -> str:
    """Evaluate arithmetic and return the formatted result; raise ToolError on any problem."""
    text = expression.translate(_ALIASES).strip()
    if not text:
        raise ToolError("the expression is empty; write e.g. 17 * 23 + 4")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text, mode="eval")
        return format_number(_Evaluator().visit(tree))
    except SyntaxError as error:
        raise ToolError(f"cannot parse {_short(text)} as arithmetic: {error.msg}") from None
    except (RecursionError, MemoryError):
        raise ToolError("the expression is nested too deeply") from None
    except ValueError as error:  # e.g. a NUL byte, or an over-long integer literal
        raise ToolError(f"cannot parse {_short(text)} as arithmetic: {error}") from None


def calculator_tool() -> Tool:
    """Build the ``calculator`` tool."""

    def calculator(expression: str) -> str:
        """Evaluate an arithmetic expression, e.g. 17 * 23 + 4 or sqrt(2) / 3.

        Args:
            expression: Numbers with + - * / // % ** and parentheses; functions sqrt, abs,
                round, min, max, floor, ceil, log, exp, sin, cos, tan; constants pi, e.
        """
        return calculate(expression)

    return make_tool(calculator, max_chars=2_000, trusted_output=True)
