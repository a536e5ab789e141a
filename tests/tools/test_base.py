"""``@tool``: name, description and schema from a plain function; validation first (SPEC T1)."""

from __future__ import annotations

import pytest

from tao import ToolDefinitionError, tool
from tao.tools.base import ArgumentError, cut


@tool
def sok_arenden(status: str, aldre_an_dagar: int = 0) -> str:
    """Search support tickets by status and minimum age in days.

    Args:
        status: Ticket status, e.g. "öppen".
        aldre_an_dagar: Only tickets at least this many days old.
    """
    return f"{status}:{aldre_an_dagar}"


def test_schema_and_description_come_from_signature_and_docstring_T1() -> None:
    assert sok_arenden.name == "sok_arenden"
    assert sok_arenden.description == "Search support tickets by status and minimum age in days."
    assert sok_arenden.schema == {
        "type": "object",
        "properties": {
            "status": {"type": "string", "description": 'Ticket status, e.g. "öppen".'},
            "aldre_an_dagar": {
                "type": "integer",
                "default": 0,
                "description": "Only tickets at least this many days old.",
            },
        },
        "required": ["status"],
        "additionalProperties": False,
    }
    assert sok_arenden.read_only


@pytest.mark.parametrize(
    ("text", "form", "expected"),
    [
        ('status="öppen", aldre_an_dagar=7', "call", {"status": "öppen", "aldre_an_dagar": 7}),
        ('"öppen", 7', "call", {"status": "öppen", "aldre_an_dagar": 7}),
        ("öppen", "bracket", {"status": "öppen"}),
        ('"öppen"', "bracket", {"status": "öppen"}),
        # a parameter's name first binds by name, quoted or not (issue 30)
        ("status=öppen", "call", {"status": "öppen"}),
        ("status=öppen", "bracket", {"status": "öppen"}),
        ('status="öppen"', "bracket", {"status": "öppen"}),
        ("x=öppen", "bracket", {"status": "x=öppen"}),  # no such parameter: the value's own
        ('status="stängd", aldre_an_dagar=3', "bracket", {"status": "stängd", "aldre_an_dagar": 3}),
    ],
)
def test_action_text_binds_to_typed_parameters_L7(text: str, form: str, expected: object) -> None:
    assert sok_arenden.bind(text, form) == expected  # type: ignore[arg-type]


def test_strings_are_coerced_to_declared_types_before_the_call_T1() -> None:
    assert sok_arenden.invoke({"status": "öppen", "aldre_an_dagar": "7"}) == "öppen:7"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"aldre_an_dagar": 1}, "status: Field required"),
        (
            {"status": "x", "aldre_an_dagar": "a week"},
            "aldre_an_dagar: Input should be a valid integer",
        ),
        ({"status": "x", "colour": "red"}, "colour: Extra inputs are not permitted"),
    ],
)
def test_invalid_arguments_are_refused_with_the_reason_T1(
    arguments: dict[str, object], message: str
) -> None:
    with pytest.raises(ArgumentError, match=message):
        sok_arenden.invoke(arguments)


def test_too_many_positional_arguments_are_refused() -> None:
    with pytest.raises(ArgumentError, match="takes 2 argument"):
        sok_arenden.bind('"a", 1, 2', "call")


def test_untyped_parameters_cannot_become_tools_T1() -> None:
    def untyped(x):  # type: ignore[no-untyped-def]
        return x

    with pytest.raises(ToolDefinitionError, match="parameter 'x' needs a type hint"):
        tool(untyped)


def test_configured_decorator_declares_effects_and_output_size() -> None:
    @tool(name="send_mail", effects="sends", max_chars=50, keep="tail")
    def mail(to: str) -> str:
        """Send a mail."""
        return to

    assert (mail.name, mail.effects, mail.read_only, mail.max_chars) == (
        "send_mail",
        ("sends",),
        False,
        50,
    )
    assert mail("a@b") == "a@b"  # still callable as plain Python


def test_cut_states_what_was_kept_L6() -> None:
    assert cut("abcdef", 10, "head") == "abcdef"
    assert cut("abcdef", 3, "head") == "abc\n[output cut: showing the first 3 of 6 characters]"
    assert cut("abcdef", 3, "tail") == "[output cut: showing the last 3 of 6 characters]\ndef"
