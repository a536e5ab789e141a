"""Fixtures shared by the ``tao serve`` tests."""

from __future__ import annotations

import pytest

from tao.state.jsontypes import JSONObject


@pytest.fixture
def calculator_tool() -> JSONObject:
    """A calculator in the OpenAI ``tools`` shape."""
    return {
        "type": "function",
        "function": {
            "name": "calculator",
            "description": "Evaluate an arithmetic expression.",
            "parameters": {
                "type": "object",
                "properties": {"expression": {"type": "string"}},
                "required": ["expression"],
            },
        },
    }
