"""How many tokens a model's context holds, how many a prompt takes, and a refusal for size.

Three sources for the window, first found wins (:func:`window_of`): the run's own setting
(``--context-window``), what the backend says of itself (the embedded model's ``n_ctx``, a
model's ``context_window`` attribute), and :data:`KNOWN_WINDOWS`, a table of API models.
A model none of them knows has its window learned from the first request it refuses
for size: :func:`overflow` reads OpenAI's, Anthropic's, Gemini's and llama.cpp's refusals,
each of which names the limit.

Counting (:func:`counter_of`) uses the backend's own tokenizer where it has one (llama.cpp's,
through a ``count_tokens(messages)`` method); then tiktoken for OpenAI's models when the
``tao[tiktoken]`` extra is installed (:class:`TiktokenCount`); otherwise :func:`estimate`,
which is conservative on purpose (a character in three is a token: English runs nearer
four), so a prompt it passes fits a provider that counts exactly.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tao.models.base import Message

#: Tokens a prompt takes, by the backend's count or an estimate.
Counter = Callable[[Sequence[Message]], int]

#: Context windows of known API models, by the model name's start (longest match wins).
#: Sources: each provider's model pages (2025); a model not here is learned, or set.
KNOWN_WINDOWS: dict[str, int] = {
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "claude-3": 200_000,
    "claude-3-5": 200_000,
    "claude-3-7": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-opus-4": 200_000,
    "claude-haiku-4": 200_000,
    "gemini-1.5-pro": 2_097_152,
    "gemini-1.5-flash": 1_048_576,
    "gemini-2.0": 1_048_576,
    "gemini-2.5": 1_048_576,
}

#: Tokens a message costs beyond its text (role, separators), in every chat format we know.
MESSAGE_OVERHEAD = 4


def window_of(model: object, setting: int | None = None) -> int | None:
    """The context window in tokens: ``setting``, else what ``model`` says or the table says.

    ``None``: unknown until the provider refuses a request for size (:func:`overflow`)."""
    if setting is not None:
        return setting
    own = getattr(model, "context_window", None)
    if isinstance(own, int) and own > 0:
        return own
    name = _bare_name(model)
    known = [prefix for prefix in KNOWN_WINDOWS if name.startswith(prefix)]
    return KNOWN_WINDOWS[max(known, key=len)] if known else None


def estimate(messages: Sequence[Message]) -> int:
    """A conservative token count: a character in three, plus each message's overhead."""
    total = 0
    for message in messages:
        chars = len(message.get("content") or "")
        for call in message.get("tool_calls") or ():
            chars += len(call["function"]["name"]) + len(call["function"]["arguments"]) + 8
        total += -(-chars // 3) + MESSAGE_OVERHEAD
    return total


def counter_of(model: object) -> Counter:
    """The backend's own count where it has one (``count_tokens``), else tiktoken's for a
    model tiktoken knows (OpenAI's, with ``tao[tiktoken]``), else :func:`estimate`."""
    count = getattr(model, "count_tokens", None)
    return count if callable(count) else TiktokenCount.of(_bare_name(model)) or estimate


def _bare_name(model: object) -> str:
    """``openai:gpt-4o`` and ``openrouter/openai/gpt-4o`` alike: ``gpt-4o``."""
    return str(getattr(model, "name", "")).split(":", 1)[-1].split("/")[-1].lower()


#: Loaded tiktoken encodings by name; ``None``: it could not be loaded (warned once).
_ENCODINGS: dict[str, Any] = {}


@dataclass(frozen=True, slots=True)
class TiktokenCount:
    """A prompt's tokens by tiktoken, the tokenizer of OpenAI's models (``tao[tiktoken]``).

    tiktoken's wheel ships no vocabulary: at first use it downloads the encoding's file
    (``o200k_base``, ``cl100k_base``) and caches it in ``TIKTOKEN_CACHE_DIR`` (else a
    ``data-gym-cache`` folder in the temporary directory). Offline, that first use fails
    unless the file was placed in the cache beforehand; then tao warns once and counts
    with :func:`estimate`, which is conservative. The encoding is loaded at the first
    count, not when the run starts: a run that never nears its window never needs it."""

    encoding: str
    """tiktoken's name of the encoding, e.g. ``o200k_base``."""

    @classmethod
    def of(cls, model: str) -> TiktokenCount | None:
        """The count for ``model`` if tiktoken is installed and knows the model, else ``None``."""
        try:
            import tiktoken
        except ImportError:
            return None
        try:
            return cls(tiktoken.encoding_name_for_model(model))
        except KeyError:  # not an OpenAI model name: tiktoken's count would be a guess
            return None

    @property
    def estimating(self) -> bool:
        """True once the encoding could not be loaded: the count is :func:`estimate`'s."""
        return self.encoding in _ENCODINGS and _ENCODINGS[self.encoding] is None

    def __call__(self, messages: Sequence[Message]) -> int:
        encoding = self._load()
        if encoding is None:
            return estimate(messages)
        total = 0
        for message in messages:
            text = message.get("content") or ""
            for call in message.get("tool_calls") or ():
                text += call["function"]["name"] + call["function"]["arguments"]
            total += len(encoding.encode(text, disallowed_special=())) + MESSAGE_OVERHEAD
        return total

    def _load(self) -> Any:
        if self.encoding not in _ENCODINGS:
            import tiktoken

            try:
                _ENCODINGS[self.encoding] = tiktoken.get_encoding(self.encoding)
            except Exception as error:  # offline, no cached file: the estimate, said once
                _ENCODINGS[self.encoding] = None
                warnings.warn(
                    f"tiktoken could not load its {self.encoding} encoding ({error}); it "
                    "downloads it at first use, so offline put the file in "
                    "TIKTOKEN_CACHE_DIR beforehand. Counting tokens with tao's "
                    "conservative estimate (a token per three characters) instead.",
                    RuntimeWarning,
                    stacklevel=2,
                )
        return _ENCODINGS[self.encoding]


@dataclass(frozen=True, slots=True)
class Overflow:
    """A request refused because it does not fit the model's context."""

    limit: int | None
    """The window the refusal names, in tokens (``None``: it names none)."""
    requested: int | None = None
    """What the request took by the provider's count, when it says."""


_NUMBER = r"([\d,_]+)"
#: Refusals for size, each with the groups (limit, requested) or (requested, limit).
_SHAPES: tuple[tuple[re.Pattern[str], tuple[int | None, int | None]], ...] = (
    # OpenAI (and vLLM, LiteLLM): code context_length_exceeded
    (
        re.compile(
            rf"maximum context length is {_NUMBER} tokens.*?(?:resulted in|requested) "
            rf"{_NUMBER}",
            re.I | re.S,
        ),
        (1, 2),
    ),
    (re.compile(rf"maximum context length is {_NUMBER} tokens", re.I), (1, None)),
    # Anthropic: "prompt is too long: 208310 tokens > 200000 maximum"
    (re.compile(rf"prompt is too long: {_NUMBER} tokens > {_NUMBER} maximum", re.I), (2, 1)),
    # Gemini: "The input token count (1200000) exceeds the maximum number of tokens allowed
    # (1048576)."
    (
        re.compile(
            rf"input token count \(?{_NUMBER}\)? exceeds the maximum number of tokens "
            rf"allowed \(?{_NUMBER}\)?",
            re.I,
        ),
        (2, 1),
    ),
    # llama-cpp-python: "Requested tokens (9000) exceed context window of 8192"
    (re.compile(rf"Requested tokens \({_NUMBER}\) exceed context window of {_NUMBER}"), (2, 1)),
    # llama.cpp's server: "request (9000 tokens) exceeds the available context size (8192
    # tokens)"
    (
        re.compile(
            rf"\(?{_NUMBER} tokens\)? exceeds the available context size \(?{_NUMBER}", re.I
        ),
        (2, 1),
    ),
)
#: Refusals for size that name no limit.
_UNNAMED = re.compile(
    r"context_length_exceeded|context length|context window|prompt is too long|"
    r"exceeds the available context|too many tokens|input token count",
    re.I,
)


def overflow(message: str) -> Overflow | None:
    """The refusal for size ``message`` reports (a backend's error text), or ``None``."""
    for pattern, (limit_at, requested_at) in _SHAPES:
        found = pattern.search(message)
        if found is not None:
            return Overflow(_group(found, limit_at), _group(found, requested_at))
    return Overflow(None) if _UNNAMED.search(message) else None


def _group(found: re.Match[str], at: int | None) -> int | None:
    if at is None:
        return None
    return int(found.group(at).replace(",", "").replace("_", ""))
