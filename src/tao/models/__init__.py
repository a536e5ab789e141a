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

from tao.errors import ModelSpecError, PluginError, TaoError
from tao.models.backends import BY_PREFIX, SPEC_FORMS, backend_of, factory_of
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


def load_model(
    spec: str | Model, *, base_url: str | None = None, api_key: str | None = None
) -> Model:
    """Resolve a model spec string to a backend; a :class:`Model` passes through.

    A built-in prefix (:data:`tao.models.backends.BACKENDS`) is looked up first; any other
    ``NAME:REST`` is asked of the ``tao.models`` plugins (:mod:`tao.plugins`), which are
    read only then. Raises :class:`tao.ModelSpecError` (one line, listing the valid forms)
    for a spec that names no backend, :class:`tao.ModelUnavailableError` when the
    backend's runtime, weights or key is missing, and :class:`tao.PluginError` for a
    plugin that cannot be used.
    """
    if not isinstance(spec, str):
        return spec
    options = {key: value for key, value in (("base_url", base_url), ("api_key", api_key)) if value}
    found = backend_of(spec)
    if found is not None:
        backend, rest = found
        return factory_of(backend)(rest, **options)
    return _plugin_model(spec, options)


def _plugin_model(spec: str, options: dict[str, str]) -> Model:
    """The model a ``tao.models`` plugin makes for ``NAME:REST``."""
    from tao import plugins

    name, _, rest = spec.strip().partition(":")
    builtin = name in BY_PREFIX  # `openai:` with no model is no plugin's either
    plugin = None if builtin or not name else plugins.find(plugins.MODELS, name, BY_PREFIX)
    if plugin is None:
        extra = "".join(f", {n}:SPEC" for n in plugins.names(plugins.MODELS, BY_PREFIX))
        raise ModelSpecError(
            f"unknown model spec {spec!r}; valid forms: {SPEC_FORMS}{extra}{plugins.unknown_note()}"
        )
    factory = plugins.load(plugin)
    if not callable(factory):
        raise PluginError(f"{plugin.label()} gave {factory!r}, not a callable that makes a model")
    try:
        model: object = factory(rest, **options)
    except TaoError:
        raise
    except (Exception, SystemExit) as error:  # the plugin's bug: one line, no traceback
        raise plugins.failed(plugin, f"failed to make a model for {spec!r}", error) from None
    if not isinstance(model, Model):
        raise PluginError(f"{plugin.label()} made {model!r}, not a tao Model")
    return model
