"""The context window a provider says its model has, read from its model-info endpoint.

A model tao's table does not know (an open model behind vLLM, llama.cpp's server, LM
Studio or Ollama; a new API model) would otherwise have its window learned only from its
first refusal for size, and Ollama refuses nothing: it cuts the prompt silently. Most
servers say the window when asked (issue 27):

- OpenAI-compatible ``GET {base_url}/models``: vLLM's ``max_model_len``, OpenRouter's and
  others' ``context_length`` (or ``context_window``, ``max_context_length``), llama.cpp's
  ``meta.n_ctx_train``, on the entry whose ``id`` is the model;
- Ollama ``POST /api/show``: the ``num_ctx`` it runs with, else its model's
  ``<architecture>.context_length``;
- Anthropic ``GET /v1/models/{model}``: ``max_input_tokens``;
- Gemini ``GET /v1beta/models/{model}``: ``inputTokenLimit``.

:func:`reported_window` asks once, with a short timeout, and never fails: a server that
says nothing, answers slowly or not at all leaves the window unknown (``None``).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator

#: How long one model-info request may take: the run waits for it before its first step.
TIMEOUT_S = 2.0
#: Keys that hold a model's window, in the order they are trusted.
_KEYS = (
    "max_model_len",
    "context_length",
    "context_window",
    "max_context_length",
    "n_ctx",
    "max_input_tokens",
    "inputTokenLimit",
    "n_ctx_train",
)
_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.M)
_ANTHROPIC_URL = "https://api.anthropic.com"
_GEMINI_URL = "https://generativelanguage.googleapis.com"


#: What each server said of each model, asked once per process (``tao eval`` makes an
#: agent per question).
_SAID: dict[tuple[str, str | None, str], int | None] = {}


def reported_window(
    provider: str,
    base_url: str | None,
    model: str,
    api_key: str | None,
    timeout_s: float = TIMEOUT_S,
) -> int | None:
    """The window ``model`` has by its server's own word, or ``None`` (nothing said, or
    the server could not be asked). ``provider`` is the spec's prefix (``openai``, ...)."""
    key = (provider, base_url, model)
    if key not in _SAID:
        _SAID[key] = _ask(provider, base_url, model, api_key, timeout_s)
    return _SAID[key]


def _ask(
    provider: str, base_url: str | None, model: str, api_key: str | None, timeout_s: float
) -> int | None:
    try:
        if provider == "anthropic":
            root = (base_url or _ANTHROPIC_URL).rstrip("/").removesuffix("/v1")
            headers = {"x-api-key": api_key or "", "anthropic-version": "2023-06-01"}
            return window_in(_get(f"{root}/v1/models/{model}", headers, timeout_s), model)
        if provider == "gemini":
            root = (base_url or _GEMINI_URL).rstrip("/").removesuffix("/v1beta")
            name = model if model.startswith("models/") else f"models/{model}"
            headers = {"x-goog-api-key": api_key or ""}
            return window_in(_get(f"{root}/v1beta/{name}", headers, timeout_s), model)
        if provider != "openai" or base_url is None:
            return None  # OpenAI's own API lists no windows: the table holds them
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        listing = _get(f"{base_url.rstrip('/')}/models", headers, timeout_s)
        listed = window_in(listing, model)
        if listed is None:
            return _ollama(base_url, model, timeout_s)
        if window_in(listing, model, trained=False) is None:  # llama.cpp: it runs with n_ctx
            return _llamacpp_context(base_url, timeout_s) or listed
        return listed
    except Exception:  # never fatal: the window stays unknown, learned from a refusal
        return None


def window_in(payload: object, model: str, *, trained: bool = True) -> int | None:
    """The window a model-info answer gives ``model``: its entry's in a list (``data``,
    ``models``), else the answer's own; with ``trained=False``, not the context the model
    was trained with (llama.cpp's ``n_ctx_train``), which its server may not run with."""
    if not isinstance(payload, dict):
        return None
    entries = payload.get("data", payload.get("models"))
    if isinstance(entries, list):
        mine = [e for e in entries if isinstance(e, dict) and _names(e, model)]
        if not mine and len(entries) == 1:  # a server of one model may name it its own way
            mine = [e for e in entries if isinstance(e, dict)]
        return next((w for e in mine if (w := _window(e, trained)) is not None), None)
    return _window(payload, trained)


def _names(entry: dict[str, object], model: str) -> bool:
    return model in (entry.get("id"), entry.get("name"), entry.get("model"))


def _window(entry: dict[str, object], trained: bool) -> int | None:
    """The first key of :data:`_KEYS` found in ``entry`` or the mappings inside it."""
    found = {key: value for key, value in _items(entry) if key in _KEYS}
    for key in _KEYS if trained else _KEYS[:-1]:
        value = found.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _items(entry: object, depth: int = 0) -> Iterator[tuple[str, object]]:
    """Every key and value of ``entry``, nested mappings (``meta``, ``top_provider``) last."""
    if not isinstance(entry, dict) or depth > 3:
        return
    yield from ((str(k), v) for k, v in entry.items() if not isinstance(v, dict))
    for value in entry.values():
        yield from _items(value, depth + 1)


def _llamacpp_context(base_url: str, timeout_s: float) -> int | None:
    """llama.cpp's server runs with ``n_ctx`` (``GET /props``), often less than it was trained."""
    props = _get(f"{base_url.rstrip('/').removesuffix('/v1')}/props", {}, timeout_s)
    settings = props.get("default_generation_settings") if isinstance(props, dict) else None
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    return n_ctx if isinstance(n_ctx, int) and n_ctx > 0 else None


def _ollama(base_url: str, model: str, timeout_s: float) -> int | None:
    """Ollama's ``/api/show``: the ``num_ctx`` it runs the model with, else the model's own."""
    root = base_url.rstrip("/").removesuffix("/v1")
    shown = _post(f"{root}/api/show", {"model": model}, timeout_s)
    if not isinstance(shown, dict):
        return None
    found = _NUM_CTX.search(str(shown.get("parameters") or ""))
    if found is not None:
        return int(found.group(1))
    info = shown.get("model_info")
    if isinstance(info, dict):
        for key, value in info.items():
            if str(key).endswith(".context_length") and isinstance(value, int) and value > 0:
                return value
    return None


def _get(url: str, headers: dict[str, str], timeout_s: float) -> object:
    request = urllib.request.Request(url, headers={"Accept": "application/json", **headers})  # noqa: S310
    return _json(request, timeout_s)


def _post(url: str, body: dict[str, str], timeout_s: float) -> object:
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    return _json(urllib.request.Request(url, data=data, headers=headers), timeout_s)  # noqa: S310


def _json(request: urllib.request.Request, timeout_s: float) -> object:
    if request.type not in ("http", "https"):  # a base URL is a web address, never a file
        return None
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:  # noqa: S310
            return json.loads(answer.read(1 << 22))
    except (urllib.error.URLError, OSError, ValueError):
        return None
