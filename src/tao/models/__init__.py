"""Model backends and the spec strings that name them (SPEC M1).

    load_model("replay:replies.json")
    load_model("openai:gpt-4o-mini")
    load_model("openai:qwen2.5", base_url="http://127.0.0.1:8000/v1")
    load_model("anthropic:claude-sonnet-5")   # pip install 'tao[anthropic]'
    load_model("gemini:gemini-3.8-flash")       # pip install 'tao[gemini]'
    load_model("local")                 # the embedded model
    load_model("local:/models/x.gguf")  # any GGUF file

Backends import their SDKs only when loaded, so ``import tao`` stays light.
"""

from __future__ import annotations

from pathlib import Path

from tao.errors import ModelSpecError
from tao.models.base import Message, Model, ModelReply, ModelRequest, OnText, ToolCall, ToolSpec

__all__ = [
    "SPEC_FORMS",
    "Message",
    "Model",
    "ModelReply",
    "ModelRequest",
    "OnText",
    "ToolCall",
    "ToolSpec",
    "load_model",
]

SPEC_FORMS = (
    "local, local:PATH.gguf, openai:MODEL (with --base-url for any compatible server), "
    "anthropic:MODEL, gemini:MODEL, replay:PATH"
)


def load_model(
    spec: str | Model, *, base_url: str | None = None, api_key: str | None = None
) -> Model:
    """Resolve a model spec string to a backend; a :class:`Model` passes through.

    Raises :class:`tao.ModelSpecError` (one line, listing the valid forms) for a
    spec that names no backend, and :class:`tao.ModelUnavailableError` when the
    backend's runtime, weights or key is missing.
    """
    if not isinstance(spec, str):
        return spec
    kind, _, rest = spec.strip().partition(":")
    if kind == "replay" and rest:
        from tao.models.replay import ReplayModel

        return ReplayModel(Path(rest))
    if kind == "openai" and rest:
        from tao.models.openai import OpenAIModel

        return OpenAIModel(rest, base_url=base_url, api_key=api_key)
    if kind == "anthropic" and rest:
        from tao.models.anthropic import AnthropicModel

        return AnthropicModel(rest, base_url=base_url, api_key=api_key)
    if kind == "gemini" and rest:
        from tao.models.gemini import GeminiModel

        return GeminiModel(rest, base_url=base_url, api_key=api_key)
    if kind == "local":
        from tao.models.local import LocalModel

        return LocalModel(Path(rest).expanduser() if rest else None)
    raise ModelSpecError(f"unknown model spec {spec!r}; valid forms: {SPEC_FORMS}")
