"""The parser's fast path reads a reply exactly as the full reader does (SPEC L4, L7).

``_plain`` takes the common ``Thought: …`` + ``Action: tool[x]`` reply in one match, for
speed (``bench/overhead.py``); whenever it answers, the answer must be the full reader's.
The replies below are built from the pieces that make the two differ if the fast path
is too eager: label words in every case and language, colons, marks, brackets, tags,
JSON, ``finish`` and blank lines.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tao.protocol.labels import LABELS, Labels
from tao.protocol.text import Action, FinalAnswer, _plain, _read, parse_reply


def _pieces(labels: Labels) -> list[str]:
    words = [labels.thought, labels.action, labels.observation, *labels.answer_words]
    return [
        *words,
        *(word.lower() for word in words),
        *(f"{word}:" for word in words),
        f"\n{labels.action}: ",
        f"{labels.thought}: ",
        "Action Input:",
        "finish",
        "FINISH",
        "lookup",
        "__init__",
        "_x",
        "[",
        "]",
        "(",
        ")",
        "[k1]",
        ": ",
        "：",
        "**",
        "`",
        "#",
        ">",
        "~",
        "_",
        "*",
        "<think>",
        "</think>",
        "<tool_call>",
        '{"action": "lookup", "action_input": "k"}',
        '{"a": 1}',
        "\n",
        "\n\n",
        "\r\n",
        " ",
        "\t",
        "2 + 2",
        "a.b-c",
        "1",
        "é",
        "İ",
    ]


def _replies(code: str) -> st.SearchStrategy[str]:
    labels = LABELS[code]
    pieces = st.lists(st.sampled_from(_pieces(labels)), max_size=8).map("".join)
    canonical = st.builds(
        lambda thought, tool, argument, tail: (
            f"{labels.thought}: {thought}\n{labels.action}: {tool}[{argument}]{tail}"
        ),
        pieces,
        st.sampled_from(["lookup", "finish", "Finish", "_x", "a.b-c", "calc2", "x"]),
        pieces,
        st.sampled_from(["", " ", "\n", "\n\n", "**", "]", "\nObservation: 4"]),
    )
    return st.one_of(pieces, canonical, st.builds(str.__add__, pieces, canonical))


@pytest.mark.parametrize("code", sorted(LABELS))
@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_the_fast_path_reads_every_reply_as_the_full_reader_does_L4(
    code: str, data: st.DataObject
) -> None:
    reply = data.draw(_replies(code))
    labels = LABELS[code]
    fast = _plain(reply, labels)
    if fast is not None:
        assert fast == _read(reply, labels)


@pytest.mark.parametrize("code", sorted(LABELS))
def test_the_common_reply_takes_the_fast_path_in_every_language(code: str) -> None:
    labels = LABELS[code]
    reply = f"{labels.thought}: I need k3.\n{labels.action}: lookup[k3]\n"
    fast = _plain(reply, labels)
    assert isinstance(fast, Action)
    assert (fast.thought, fast.tool, fast.argument) == ("I need k3.", "lookup", "k3")
    assert fast == _read(reply, labels) == parse_reply(reply, labels)
    done = _plain(f"{labels.action}: finish[ 395 ]", labels)
    assert isinstance(done, FinalAnswer) and done.answer == "395" and done.thought is None


@pytest.mark.parametrize(
    "reply",
    [
        "Thought: note: careful\nAction: lookup[k]",  # a colon: maybe another label
        "**Thought:** x\nAction: lookup[k]",  # marks around a label
        "Thought: x\nAction: __init__[k]",  # the full reader skips leading marks
        'Thought: x\nAction: lookup[{"key": "k"}]',  # JSON arguments
        "Thought: x\nAction: lookup[a[0]]",  # brackets inside
        "<think>Action: rm[x]</think>\nAction: lookup[k]",  # a thinking block
        "Thought: x\nAction: lookup[k]\nObservation: made up",  # more after the action
        "thought: x\naction: lookup[k]",  # another case
    ],
)
def test_anything_unusual_goes_to_the_full_reader(reply: str) -> None:
    assert _plain(reply, LABELS["en"]) is None
