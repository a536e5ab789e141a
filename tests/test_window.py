"""Reading a provider's refusal for size, and the window a backend has (issue 27).

The messages are the providers' own, as their SDKs put them in a ModelError; a message
that is not about size (a bad grammar, a rate limit) must never read as one, or a run
would compact and retry instead of ending with the backend's error.
"""

from __future__ import annotations

import pytest

from tao.models.window import KNOWN_WINDOWS, Overflow, estimate, overflow, window_of


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (  # OpenAI, code context_length_exceeded
            "openai:gpt-4o rejected the request: This model's maximum context length is 8192 "
            "tokens. However, your messages resulted in 9,310 tokens. Please reduce the length "
            "of the messages.",
            Overflow(8192, 9310),
        ),
        (  # OpenAI, when max_tokens is what tips it over
            "This model's maximum context length is 128000 tokens. However, you requested "
            "130500 tokens (129988 in the messages, 512 in the completion).",
            Overflow(128000, 130500),
        ),
        (  # Anthropic
            "anthropic:claude-sonnet-4 rejected the request: prompt is too long: 208310 tokens "
            "> 200000 maximum",
            Overflow(200000, 208310),
        ),
        (  # Gemini, as google-genai's ClientError words it
            "gemini:gemini-2.0-flash: 400 INVALID_ARGUMENT. {'error': {'code': 400, 'message': "
            "'The input token count (1200000) exceeds the maximum number of tokens allowed "
            "(1048576).', 'status': 'INVALID_ARGUMENT'}}",
            Overflow(1048576, 1200000),
        ),
        (  # the embedded model (llama-cpp-python), and tao serve passing it on
            "local: Requested tokens (9000) exceed context window of 8192",
            Overflow(8192, 9000),
        ),
        (  # llama.cpp's own server
            "request (9000 tokens) exceeds the available context size (8192 tokens), try "
            "increasing it",
            Overflow(8192, 9000),
        ),
        ("openai:x rejected the request: context_length_exceeded", Overflow(None)),
    ],
)
def test_each_providers_refusal_names_the_window(message: str, expected: Overflow) -> None:
    assert overflow(message) == expected


@pytest.mark.parametrize(
    "message",
    [
        "local: invalid GBNF grammar: unexpected token",
        "openai:gpt-4o: rate limited, retries exhausted (429)",
        "openai:gpt-4o: the API key was rejected (Incorrect API key provided)",
        "anthropic:claude: server answered 529 (Overloaded)",
    ],
)
def test_other_failures_are_not_refusals_for_size(message: str) -> None:
    assert overflow(message) is None


def test_the_window_comes_from_the_setting_the_backend_or_the_table() -> None:
    class Served:
        name = "openai:local"
        context_window = 4096

    class Api:
        name = "openai:gpt-4o-mini-2024-07-18"

    class Unknown:
        name = "openai:my-finetune"

    assert window_of(Served(), 2048) == 2048
    assert window_of(Served()) == 4096
    assert window_of(Api()) == KNOWN_WINDOWS["gpt-4o-mini"]
    assert window_of(Unknown()) is None


def test_the_estimate_is_conservative() -> None:
    """A token per three characters at most: English text runs nearer four."""
    text = "The quick brown fox jumps over the lazy dog. " * 100
    assert estimate([{"role": "user", "content": text}]) >= len(text) / 3
