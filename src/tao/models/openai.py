"""OpenAI and every OpenAI-compatible server (vLLM, Ollama, llama.cpp, ``tao serve``).

Real code against the official ``openai`` SDK: set ``OPENAI_API_KEY`` for
OpenAI itself, or pass ``base_url`` (``--base-url`` / ``OPENAI_BASE_URL``) for a
compatible server, where a key is usually not needed.

    model = OpenAIModel("gpt-4o-mini")
    model = OpenAIModel("qwen2.5", base_url="http://127.0.0.1:8000/v1")
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tao.errors import ModelError, ModelUnavailableError
from tao.models.base import Completion, Message

if TYPE_CHECKING:
    import openai

#: OpenAI accepts at most four stop sequences.
MAX_STOP = 4


class OpenAIModel:
    """Chat completions through the official SDK, with client-side stop when refused."""

    supports_grammar = False

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 3,
    ) -> None:
        try:
            import openai
        except ImportError:  # pragma: no cover - openai is a core dependency
            raise ModelUnavailableError("the openai SDK is missing: pip install openai") from None
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        api_key = api_key or os.environ.get("OPENAI_API_KEY")
        if not api_key:
            if base_url is None:
                raise ModelUnavailableError(
                    "no OpenAI API key: set OPENAI_API_KEY, "
                    "or pass --base-url for a compatible server"
                )
            api_key = "not-needed"  # local servers ignore it; the SDK insists on one
        self.name = f"openai:{model}"
        self.model = model
        self.base_url = base_url
        self.supports_stop = True
        self._openai = openai
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=max_retries
        )

    def complete(
        self,
        messages: Sequence[Message],
        *,
        stop: Sequence[str] = (),
        temperature: float = 0.0,
        max_tokens: int | None = None,
        grammar: str | None = None,
    ) -> Completion:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "temperature": temperature,
        }
        if max_tokens is not None:
            # OpenAI's newer models want max_completion_tokens; compatible servers max_tokens.
            request["max_tokens" if self.base_url else "max_completion_tokens"] = max_tokens
        if stop and self.supports_stop:
            request["stop"] = list(stop)[:MAX_STOP]
        try:
            response = self._create(request)
        except self._openai.BadRequestError as error:
            if "stop" not in request or "stop" not in str(error).lower():
                raise ModelError(f"{self.name} rejected the request: {_message(error)}") from None
            # Reasoning models reject `stop`: remember, and let the loop cut client-side (L3).
            self.supports_stop = False
            del request["stop"]
            response = self._create(request)
        if not response.choices:
            raise ModelError(f"{self.name} returned no choices")
        choice = response.choices[0]
        usage = response.usage
        return Completion(
            text=choice.message.content or "",
            input_tokens=usage.prompt_tokens if usage else 0,
            output_tokens=usage.completion_tokens if usage else 0,
            finish_reason=choice.finish_reason,
        )

    def _create(self, request: dict[str, Any]) -> openai.types.chat.ChatCompletion:
        errors = self._openai
        try:
            response: openai.types.chat.ChatCompletion = self._client.chat.completions.create(
                **request
            )
            return response
        except errors.BadRequestError:
            raise
        except errors.AuthenticationError as error:
            raise ModelError(f"{self.name}: the API key was rejected ({_message(error)})") from None
        except errors.NotFoundError as error:
            raise ModelError(
                f"{self.name}: model or endpoint not found ({_message(error)})"
            ) from None
        except errors.APIConnectionError as error:
            where = self.base_url or "api.openai.com"
            raise ModelError(f"{self.name}: cannot reach {where} ({error})") from None
        except errors.APIStatusError as error:
            raise ModelError(
                f"{self.name}: server answered {error.status_code} ({_message(error)})"
            ) from None
        except errors.OpenAIError as error:
            raise ModelError(f"{self.name}: {error}") from None


def _message(error: Any) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(getattr(error, "message", error))
