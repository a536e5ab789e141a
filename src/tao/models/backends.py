"""The built-in model backends, one record each: everything else about a backend derives from here.

``load_model`` finds a spec's backend by its prefix, the ``--model`` help and the unknown-spec
error list the spec forms, the price table is asked under the backend's provider id, and
telemetry names the provider as the GenAI conventions do, all from :data:`BACKENDS`.
Adding a backend is one file (``models/<provider>.py``) and one record here:

    Backend(prefix="mistral", factory="tao.models.mistral:MistralModel", extra="mistral",
            price_provider="mistral", telemetry_name="mistral_ai", spec_form="mistral:MODEL")

A record names its factory by reference (``"module:attribute"``, the form of an entry
point) instead of holding it, so this module imports no backend: ``import tao`` stays
cheap, no SDK loads before its backend is asked for, and the backends (which import
pricing, which reads this table) sit above it without an import circle. Third-party
backends come from the ``tao.models`` entry points instead (:mod:`tao.plugins`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Protocol, cast

from tao.models.base import Model


class ModelFactory(Protocol):
    """Makes a model from the spec after ``PREFIX:`` (``""`` for a bare ``local``).

    ``options`` holds ``base_url`` and ``api_key`` when they were given, nothing else.
    """

    def __call__(self, rest: str, /, **options: str) -> Model: ...


@dataclass(frozen=True, kw_only=True, slots=True)
class Backend:
    """One model backend: what names it, what makes it, what prices and traces it."""

    prefix: str
    """The spec's prefix: ``openai`` in ``openai:gpt-4o-mini``."""
    factory: str
    """``"module:attribute"`` of its :class:`ModelFactory`, imported only when it is loaded."""
    spec_form: str
    """How the help writes its specs: ``"openai:MODEL"``."""
    telemetry_name: str
    """``gen_ai.provider.name`` in its spans (the OpenTelemetry GenAI conventions' word)."""
    extra: str | None = None
    """The pip extra that installs its runtime (``pip install 'tao[EXTRA]'``); ``None``: core."""
    price_provider: str | None = None
    """The genai-prices provider id its models are priced under; ``None``: never priced."""
    needs_rest: bool = True
    """Whether a spec must name something after the prefix (``openai:`` alone names nothing)."""
    note: str = ""
    """Said after its form in the unknown-spec error, e.g. how to reach compatible servers."""


#: Every built-in backend, in the order the help lists them (SPEC M1).
BACKENDS: tuple[Backend, ...] = (
    Backend(
        prefix="local",
        factory="tao.models.local:from_spec",
        spec_form="local, local:PATH.gguf",
        telemetry_name="llama_cpp",
        extra="local",
        needs_rest=False,
    ),
    Backend(
        prefix="openai",
        factory="tao.models.openai:OpenAIModel",
        spec_form="openai:MODEL",
        telemetry_name="openai",
        price_provider="openai",
        note="(with --base-url for any compatible server)",
    ),
    Backend(
        prefix="anthropic",
        factory="tao.models.anthropic:AnthropicModel",
        spec_form="anthropic:MODEL",
        telemetry_name="anthropic",
        extra="anthropic",
        price_provider="anthropic",
    ),
    Backend(
        prefix="gemini",
        factory="tao.models.gemini:GeminiModel",
        spec_form="gemini:MODEL",
        telemetry_name="gcp.gemini",
        extra="gemini",
        price_provider="google",
    ),
    Backend(
        prefix="replay",
        factory="tao.models.replay:from_spec",
        spec_form="replay:PATH",
        telemetry_name="tao.replay",
    ),
)

#: The built-in backends by prefix.
BY_PREFIX = {backend.prefix: backend for backend in BACKENDS}

#: The spec forms as ``--model``'s help lists them.
MODEL_FORMS = ", ".join(backend.spec_form for backend in BACKENDS)

#: The spec forms as the unknown-spec error lists them, with each backend's note.
SPEC_FORMS = ", ".join(
    f"{backend.spec_form} {backend.note}" if backend.note else backend.spec_form
    for backend in BACKENDS
)


def backend_of(spec: str) -> tuple[Backend, str] | None:
    """The built-in backend a spec names and the rest of the spec, or ``None``."""
    prefix, _, rest = spec.strip().partition(":")
    backend = BY_PREFIX.get(prefix)
    if backend is None or (backend.needs_rest and not rest):
        return None
    return backend, rest


def factory_of(backend: Backend) -> ModelFactory:
    """Import the backend's module and return its factory."""
    module, _, attribute = backend.factory.partition(":")
    found: object = importlib.import_module(module)
    for part in attribute.split("."):
        found = getattr(found, part)
    return cast(ModelFactory, found)  # every record's factory is loaded by tests/models
