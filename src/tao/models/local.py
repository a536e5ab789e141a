"""The embedded offline model: a GGUF file run on the CPU by llama.cpp (SPEC M5).

``--model local`` is the verified default model from the install cache
(``python -m tao.models.install``); ``--model local:PATH.gguf`` is any GGUF file.

One ``llama_cpp.Llama`` object is kept per process per model file, so the
steps of an episode share its KV cache: the transcript only grows, and each
call prefills only the tokens after the longest common prefix with the
previous prompt. :attr:`ModelReply.evaluated_tokens` reports that number.
When calls interleave (eval workers, two few-shot prompts, server clients), the
contexts they would cut short are saved and restored by token prefix
(:mod:`tao.models.kvstates`), so no prefix is prefilled twice.

llama.cpp is CPU-bound and sync by nature: ``complete`` is the one path, and
``acomplete`` runs it in a worker thread (:class:`tao.models.bridge.SyncFirstModel`).

    model = LocalModel()
    reply = model.complete(
        ModelRequest(messages=[{"role": "user", "content": "Say hi"}], max_tokens=16)
    )
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tao.errors import ConfigError, ModelError, ModelUnavailableError
from tao.interrupts import held_interrupts
from tao.models.base import Message, ModelReply, ModelRequest, OnText
from tao.models.bridge import SyncFirstModel
from tao.models.install import (
    MODEL_SHA256,
    default_model_path,
    install_command,
    is_gguf,
    runtime_is_installed,
    verify_model,
)
from tao.models.kvstates import StateCache
from tao.models.sampling import lazy_grammar

if TYPE_CHECKING:
    from llama_cpp.llama_grammar import LlamaGrammar

__all__ = ["DEFAULT_MAX_TOKENS", "DEFAULT_N_CTX", "LoadedLlama", "LocalModel", "get_llama"]

#: Room for the paper's 6-shot HotpotQA prompt (~2.5k tokens) plus 7 steps with observations.
DEFAULT_N_CTX = 8192
#: A reply is one thought and one action; this only bounds a runaway generation.
DEFAULT_MAX_TOKENS = 512


@dataclass
class LoadedLlama:
    """One loaded model, shared by every :class:`LocalModel` (and the server) using it."""

    llama: Any
    path: Path
    n_ctx: int
    n_threads: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Prompt tokens processed by the first ``eval`` of the current call.
    evaluated: list[int] = field(default_factory=list)
    grammars: dict[str, LlamaGrammar] = field(default_factory=dict)
    #: Receives each generated token id during the current call (set under ``lock``).
    on_token: Callable[[int], None] | None = None
    #: ``time.monotonic()`` past which the current call stops generating (set under ``lock``).
    deadline: float | None = None
    #: Saved contexts by token prefix; ``None`` turns the cache off (benchmarks).
    states: StateCache | None = field(default_factory=StateCache)
    #: Greedy decoding under a grammar asks it about the chosen token only
    #: (:mod:`tao.models.sampling`); ``False``: llama.cpp's full filter (benchmarks).
    lazy_grammar: bool = True
    _formatter: Any = None

    def prompt_tokens(self, messages: Sequence[Message]) -> list[int] | None:
        """The tokens ``create_chat_completion`` will evaluate for ``messages``.

        ``None`` when the model has no chat template in its metadata (the cache is then
        skipped). A mismatch could only cost time: llama.cpp compares tokens itself.
        """
        llama = self.llama
        if self._formatter is None:
            template = llama.metadata.get("tokenizer.chat_template")
            if not template or llama.chat_format != "chat_template.default":
                return None
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            def text(token: int) -> str:
                return str(llama._model.token_get_text(token)) if token != -1 else ""

            self._formatter = Jinja2ChatFormatter(
                template=template,
                eos_token=text(llama.token_eos()),
                bos_token=text(llama.token_bos()),
            )
        result = self._formatter(messages=[dict(m) for m in messages])
        tokens: list[int] = llama.tokenize(
            result.prompt.encode("utf-8"), add_bos=not result.added_special, special=True
        )
        return tokens

    def grammar(self, text: str) -> LlamaGrammar:
        """Compile (once) and return a ``LlamaGrammar`` for GBNF ``text``."""
        compiled = self.grammars.get(text)
        if compiled is None:
            from llama_cpp.llama_grammar import LlamaGrammar

            from tao.protocol.grammar import check_grammar

            try:
                check_grammar(text)
            except ValueError as error:
                raise ModelError(f"invalid GBNF grammar: {error}") from error
            compiled = LlamaGrammar.from_string(text, verbose=False)
            if len(self.grammars) > 64:
                self.grammars.clear()
            self.grammars[text] = compiled
        return compiled


_LOADED: dict[Path, LoadedLlama] = {}
_LOADED_LOCK = threading.Lock()


def _default_threads() -> int:
    """``$TAO_THREADS`` if set, else every core this process may run on."""
    override = os.environ.get("TAO_THREADS", "")
    if override.isdigit() and int(override) > 0:
        return int(override)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _unavailable_runtime() -> ModelUnavailableError:
    return ModelUnavailableError(
        "the local model runtime (llama-cpp-python) is not installed; "
        f"install it with: {install_command()}"
    )


def get_llama(
    path: Path, *, n_ctx: int = DEFAULT_N_CTX, n_threads: int | None = None
) -> LoadedLlama:
    """Return the process-wide loaded model for ``path``, loading it on first use.

    A later call asking for a larger context reloads the model with it.
    """
    resolved = path.resolve()
    threads = n_threads or _default_threads()
    with _LOADED_LOCK:
        loaded = _LOADED.get(resolved)
        if loaded is not None and loaded.n_ctx >= n_ctx:
            return loaded
        try:
            import llama_cpp
        except ImportError as error:
            raise _unavailable_runtime() from error
        try:
            with held_interrupts():  # Ctrl-C would be lost in llama.cpp's logging callback
                llama = llama_cpp.Llama(
                    model_path=str(resolved),
                    n_ctx=n_ctx,
                    n_batch=512,
                    n_threads=threads,
                    n_threads_batch=threads,
                    seed=0,
                    verbose=False,
                )
        except (ValueError, RuntimeError, OSError) as error:
            raise ModelError(f"cannot load {resolved}: {error}") from error
        loaded = LoadedLlama(llama=llama, path=resolved, n_ctx=n_ctx, n_threads=threads)
        _count_prompt_evals(loaded)
        lazy_grammar(llama, lambda: loaded.lazy_grammar)  # faster, the very same tokens
        _LOADED[resolved] = loaded
        return loaded


def _count_prompt_evals(loaded: LoadedLlama) -> None:
    """Wrap ``Llama.eval`` to record how many prompt tokens each call really processes.

    ``Llama.generate`` evaluates the uncached prompt suffix in its first
    ``eval`` call, then one generated token per call; the first is what we report.
    The later calls are the generated tokens as they come, which is how ``on_text``
    streams: the reply itself still comes from the one non-streaming path, so its
    text, usage and grammar are exactly those of a call nobody watches.
    """
    llama = loaded.llama
    original: Callable[[Sequence[int]], None] = llama.eval

    def counting_eval(tokens: Sequence[int]) -> None:
        if loaded.deadline is not None and time.monotonic() >= loaded.deadline:
            raise _OutOfTime  # before llama.cpp sees the tokens: the context stays whole
        loaded.evaluated.append(len(tokens))
        if loaded.on_token is not None and len(loaded.evaluated) > 1:
            for token in tokens:  # a generated token, evaluated right after it was sampled
                loaded.on_token(token)
        original(tokens)

    llama.eval = counting_eval


class _OutOfTime(Exception):
    """The current call's ``timeout_s`` ran out between two generated tokens."""


class LocalModel(SyncFirstModel):
    """A :class:`tao.models.base.Model` backed by llama.cpp on the CPU.

    ``path=None`` is the embedded default model, which must be installed and
    pass its sha256 check; any other path must be a GGUF file. With
    ``reuse_cache=False`` every call starts from an empty context (the naive
    baseline the benchmark compares against).
    """

    supports_stop = True
    supports_grammar = True
    supports_tools = False

    def __init__(
        self,
        path: Path | None = None,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        reuse_cache: bool = True,
    ) -> None:
        if path is None:
            model_path = default_model_path()
            self.name = "local"
        else:
            model_path = Path(path).expanduser()
            self.name = f"local:{path}"
        if path is not None:
            # A path the user gave that is wrong is a usage error (exit 2), whatever else
            # is installed; a missing runtime or embedded model is not (exit 1).
            if not model_path.is_file():
                raise ConfigError(f"no model file at {model_path} (local:PATH needs a .gguf file)")
            if not is_gguf(model_path):
                raise ConfigError(f"{model_path} is not a GGUF file (tao loads only GGUF models)")
        if not runtime_is_installed():
            raise _unavailable_runtime()
        if path is None:
            if not model_path.is_file():
                raise ModelUnavailableError(
                    f"the embedded model is not installed ({model_path}); "
                    f"install it with: {install_command()}"
                )
            if not verify_model(model_path, MODEL_SHA256):
                raise ModelUnavailableError(
                    f"the embedded model at {model_path} fails its sha256 check; "
                    f"reinstall it with: {install_command()} --force"
                )
        self.path = model_path
        self.max_tokens = max_tokens
        self.reuse_cache = reuse_cache
        self._samples = 0
        self._loaded = get_llama(model_path, n_ctx=n_ctx, n_threads=n_threads)

    @property
    def loaded(self) -> LoadedLlama:
        """The shared llama.cpp model (for the server and benchmarks)."""
        return self._loaded

    @property
    def n_ctx(self) -> int:
        return self._loaded.n_ctx

    @property
    def context_window(self) -> int:
        """Tokens the context holds: llama.cpp's ``n_ctx`` (:mod:`tao.models.window`)."""
        return self._loaded.n_ctx

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """The tokens ``messages`` take as this model's prompt, by its own tokenizer and chat
        template (what compaction measures the window in)."""
        tokens = self._loaded.prompt_tokens(messages)
        if tokens is not None:
            return len(tokens)
        llama = self._loaded.llama
        text = "\n".join(m.get("content") or "" for m in messages)
        return len(llama.tokenize(text.encode("utf-8"), add_bos=True)) + 4 * len(messages)

    def cost_known(self) -> bool:
        """Always: it runs here, so each reply costs ``0.0`` dollars (:mod:`tao.models.pricing`)."""
        return True

    def complete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        """Generate the assistant's next reply; see :class:`tao.models.base.Model`.

        At temperature 0 the seed is fixed; above it, each call takes the next seed of
        a per-model sequence, so samples differ (CoT-SC) yet a run replays identically.
        """
        if request.tools:
            raise ModelError(
                f"{self.name} has no native tool calling; use the text protocol, or serve it "
                "with `tao serve` and use --protocol native through openai:local"
            )
        loaded = self._loaded
        seed = 0
        if request.temperature > 0:
            self._samples += 1
            seed = self._samples
        compiled = loaded.grammar(request.grammar) if request.grammar else None
        streamer = _Streamer(loaded.llama, request.stop, on_text) if on_text else None
        with loaded.lock:
            llama = loaded.llama
            self._continue_context(request)
            loaded.on_token = streamer.token if streamer is not None else None
            if request.timeout_s is not None:  # the run's time left (--max-seconds) binds
                loaded.deadline = time.monotonic() + request.timeout_s
            try:
                response = llama.create_chat_completion(
                    messages=[dict(message) for message in request.messages],
                    stop=list(request.stop),
                    temperature=request.temperature,
                    max_tokens=request.max_tokens or self.max_tokens,
                    grammar=compiled,
                    seed=seed,
                )
            except (ValueError, RuntimeError) as error:
                # e.g. "Requested tokens (9000) exceed context window of 8192"
                raise ModelError(f"{self.name}: {error}") from error
            except _OutOfTime:
                raise ModelError(
                    f"{self.name}: timed out after {request.timeout_s:.3g} s, mid-reply"
                ) from None
            finally:
                loaded.on_token = loaded.deadline = None
            evaluated = loaded.evaluated[0] if loaded.evaluated else 0
        choice = response["choices"][0]
        usage = response.get("usage") or {}
        text = choice["message"].get("content") or ""
        if streamer is not None:
            streamer.finish(text)
        return ModelReply(
            text=text,
            input_tokens=int(usage.get("prompt_tokens", 0)),
            output_tokens=int(usage.get("completion_tokens", 0)),
            evaluated_tokens=evaluated,
            finish_reason=choice.get("finish_reason"),
            cost_usd=0.0,  # runs in this process: no provider bills it (tao.models.pricing)
        )

    def _continue_context(self, request: ModelRequest) -> None:
        """Under the lock: put back the saved context that shares the longest prefix with
        this call's prompt (or start from an empty one without the cache)."""
        loaded = self._loaded
        loaded.evaluated.clear()
        if not self.reuse_cache:
            loaded.llama.reset()
        elif loaded.states is not None:
            tokens = loaded.prompt_tokens(request.messages)
            if tokens is not None:
                loaded.states.prepare(loaded.llama, tokens)
        loaded.evaluated.clear()


def from_spec(rest: str, /, **options: str) -> LocalModel:
    """``local`` (the embedded model) or ``local:PATH`` (a GGUF file); no server, no key."""
    return LocalModel(Path(rest).expanduser() if rest else None)


class _Streamer:
    """Generated tokens to ``on_text`` deltas whose concatenation is exactly the reply.

    Bytes are decoded incrementally (a character may span tokens), and text that may be
    the start of a stop sequence is held back until it is known not to be: the stop is
    cut from the reply, so it must never reach the screen. :meth:`finish` sends what
    is left of the final text.
    """

    def __init__(self, llama: Any, stop: Sequence[str], on_text: OnText) -> None:
        import codecs

        self._llama = llama
        self._stop = [s for s in stop if s]
        self._on_text = on_text
        # errors="ignore", as llama.cpp decodes the reply: the deltas must add up to it
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="ignore")
        self._text = ""
        self.sent = ""

    def token(self, token: int) -> None:
        self._text += self._decoder.decode(self._llama.detokenize([token]))
        safe = self._safe(self._text)
        if len(safe) > len(self.sent) and safe.startswith(self.sent):
            self._send(safe[len(self.sent) :])

    def _safe(self, text: str) -> str:
        """``text`` up to any complete stop, less a tail that may begin one."""
        for stop in self._stop:
            if stop in text:
                text = text[: text.index(stop)]
        held = 0
        for stop in self._stop:
            for size in range(min(len(stop) - 1, len(text)), held, -1):
                if text.endswith(stop[:size]):
                    held = size
                    break
        return text[: len(text) - held]

    def finish(self, text: str) -> None:
        if text.startswith(self.sent) and len(text) > len(self.sent):
            self._send(text[len(self.sent) :])

    def _send(self, delta: str) -> None:
        self.sent += delta
        self._on_text(delta)
