"""Saved llama.cpp contexts keyed by their tokens: a prompt prefix is prefilled once (issue 16).

llama-cpp-python already reuses the *live* context's longest common prefix with the
next prompt, which covers one conversation growing step by step. It loses that work
whenever calls interleave: eval workers (``--concurrency``) taking turns on the one
model, ``react-cot-sc`` switching between two few-shot prompts, ``tao serve`` clients
with different system prompts. Each switch truncated the context and prefilled the
other prompt again, few-shot prefix and transcript alike.

:class:`StateCache` keeps the context of each interleaved conversation: just before a
call would cut the live context short, the live state is saved under its tokens; and
when a saved state shares a longer prefix with the new prompt than the live context
does, it is restored first. So every worker keeps its own copy, and the few-shot prefix
of each prompt survives any switch.

Why not ``Llama.save_state`` / ``LlamaRAMCache``: they copy llama-cpp-python's logits
buffer (``n_batch`` x vocabulary floats, 311 MB for the embedded model) on every save and
load, and ``LlamaRAMCache`` saves after every completion; measured on the embedded model
with 1.4k tokens in context, ``save_state`` + ``load_state`` took 7.6 s where the raw
``llama_state_get_data`` / ``llama_state_set_data`` pair took 0.3 s (docs/performance.md).
The logits are not needed: a restored context always evaluates at least one token again.

Correctness never depends on the cache: llama-cpp-python compares the restored tokens
with the prompt's and evaluates every token after the common prefix.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["DEFAULT_CAPACITY_BYTES", "MIN_GAIN_TOKENS", "StateCache", "common_prefix"]

#: Saved contexts kept per loaded model (about 28 KB a token for the embedded model).
DEFAULT_CAPACITY_BYTES = 1 << 30
#: A restore (a memory copy) pays off only when it spares at least this many tokens of prefill.
MIN_GAIN_TOKENS = 32


def common_prefix(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if len(differ) else n


@dataclass
class _Saved:
    tokens: np.ndarray[Any, Any]
    data: ctypes.Array[ctypes.c_uint8]
    size: int


class StateCache:
    """Saved contexts of one ``llama_cpp.Llama``, least recently used dropped first.

    Not thread-safe: the caller holds the model's lock around :meth:`prepare`.
    """

    def __init__(self, capacity_bytes: int = DEFAULT_CAPACITY_BYTES) -> None:
        self.capacity_bytes = capacity_bytes
        self._saved: OrderedDict[int, _Saved] = OrderedDict()
        self._next = 0
        #: Counters for benchmarks and tests.
        self.saves = 0
        self.restores = 0
        self.restored_tokens = 0

    @property
    def size_bytes(self) -> int:
        return sum(saved.size for saved in self._saved.values())

    def __len__(self) -> int:
        return len(self._saved)

    def prepare(self, llama: Any, prompt: Sequence[int]) -> int:
        """Get ``llama`` ready for ``prompt``; return the prompt tokens restored (0 if none).

        Saves the live context if the prompt would cut it short, then restores the saved
        context sharing the longest prefix with the prompt, if it beats the live one.
        """
        tokens = np.asarray(prompt, dtype=np.intc)
        live = np.asarray(llama.input_ids[: llama.n_tokens])
        live_shared = common_prefix(live, tokens)
        if len(live) - live_shared >= MIN_GAIN_TOKENS:
            self._save(llama, live)
        best_key, best_shared = None, live_shared
        for key, saved in self._saved.items():
            shared = common_prefix(saved.tokens, tokens)
            if shared > best_shared:
                best_key, best_shared = key, shared
        if best_key is None or best_shared - live_shared < MIN_GAIN_TOKENS:
            return 0
        return best_shared if self._restore(llama, best_key) else 0

    def _save(self, llama: Any, live: np.ndarray[Any, Any]) -> None:
        import llama_cpp

        for key, saved in list(self._saved.items()):
            if common_prefix(saved.tokens, live) == len(saved.tokens):
                del self._saved[key]  # the live context extends it: it can never win again
        ctx = llama._ctx.ctx
        size = int(llama_cpp.llama_state_get_size(ctx))
        data = (ctypes.c_uint8 * size)()
        written = int(llama_cpp.llama_state_get_data(ctx, data, size))
        if written <= 0 or written > size:
            return  # this build cannot save its state: keep going without the cache
        self._saved[self._next] = _Saved(tokens=live.copy(), data=data, size=written)
        self._next += 1
        self.saves += 1
        while self.size_bytes > self.capacity_bytes and len(self._saved) > 1:
            self._saved.popitem(last=False)

    def _restore(self, llama: Any, key: int) -> bool:
        import llama_cpp

        saved = self._saved[key]
        self._saved.move_to_end(key)
        if (
            int(llama_cpp.llama_state_set_data(llama._ctx.ctx, saved.data, saved.size))
            != saved.size
        ):
            llama.reset()  # a half-written context: start from empty rather than trust it
            return False
        n = len(saved.tokens)
        llama.input_ids[:n] = saved.tokens
        llama.n_tokens = n
        # The logits are not restored: make llama-cpp-python evaluate at least one token.
        llama._requires_eval = True
        self.restores += 1
        self.restored_tokens += n
        return True
