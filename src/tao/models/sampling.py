"""Greedy decoding under a grammar that asks the grammar about one token, not the vocabulary.

llama.cpp's grammar sampler tests every token of the vocabulary against the grammar
before each token is chosen: 151,000 of them for the embedded Qwen model, which made
grammar-constrained decoding about a quarter slower than free decoding. At temperature
0 the token chosen is the most likely one the grammar allows, and the most likely token
overall is nearly always allowed (the grammar only keeps the model on the format). So
:class:`GreedyUnderGrammar` takes the most likely token, asks the grammar about that
one token, and filters the whole vocabulary only when the grammar refuses it: the
tokens are exactly those of the full filter (``tests/models/test_sampling.py``), as in
llama.cpp's own ``common_sampler``.

:func:`lazy_grammar` puts it under ``Llama.generate`` for the calls where it changes
nothing but the speed: greedy, no penalties, no logits processors. Sampling at a
temperature (CoT-SC) keeps llama-cpp-python's own sampler.
"""

from __future__ import annotations

import ctypes
import inspect
import math
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llama_cpp.llama_grammar import LlamaGrammar

__all__ = ["GreedyUnderGrammar", "lazy_grammar"]

#: ``Llama._init_sampler``'s options under which greedy decoding is the whole sampler.
_NEUTRAL: dict[str, object] = {
    "temp": 0.0,
    "repeat_penalty": 1.0,
    "frequency_penalty": 0.0,
    "presence_penalty": 0.0,
    "mirostat_mode": 0,
    "logits_processor": None,
}


class GreedyUnderGrammar:
    """The sampler ``Llama.sample`` calls (``sample(ctx, idx)``), for greedy decoding under
    ``grammar``. ``refused`` counts the tokens the grammar turned down, each of which took
    the full filter."""

    def __init__(self, vocab: Any, grammar: LlamaGrammar) -> None:
        import llama_cpp

        self._lib = llama_cpp
        self._greedy = llama_cpp.llama_sampler_init_greedy()
        params = llama_cpp.llama_sampler_chain_default_params()
        self._constrained = llama_cpp.llama_sampler_chain_init(params)  # grammar, then greedy
        rules = llama_cpp.llama_sampler_init_grammar(
            vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        llama_cpp.llama_sampler_chain_add(self._constrained, rules)
        llama_cpp.llama_sampler_chain_add(self._constrained, llama_cpp.llama_sampler_init_greedy())
        self._rules = llama_cpp.llama_sampler_chain_get(self._constrained, 0)  # owned by the chain
        self.refused = 0
        weakref.finalize(self, _free, llama_cpp, self._greedy, self._constrained)

    def sample(self, ctx: Any, idx: int) -> int:
        lib = self._lib
        token: int = lib.llama_sampler_sample(self._greedy, ctx.ctx, idx)
        cell = lib.llama_token_data(token, 0.0, 0.0)
        one = lib.llama_token_data_array(ctypes.pointer(cell), 1, -1, False)
        lib.llama_sampler_apply(self._rules, ctypes.byref(one))
        if cell.logit != -math.inf:  # allowed: what the full filter would have chosen too
            lib.llama_sampler_accept(self._constrained, token)
            return token
        self.refused += 1
        chosen: int = lib.llama_sampler_sample(self._constrained, ctx.ctx, idx)  # accepts it
        return chosen


def _free(lib: Any, *samplers: object) -> None:
    for sampler in samplers:
        lib.llama_sampler_free(sampler)


def lazy_grammar(llama: Any, enabled: Callable[[], bool] = lambda: True) -> None:
    """Make ``llama``'s greedy, penalty-free generations under a grammar use
    :class:`GreedyUnderGrammar` while ``enabled()``; every other call keeps its own sampler."""
    original = llama._init_sampler
    defaults = {name: p.default for name, p in inspect.signature(original).parameters.items()}

    def init_sampler(**options: Any) -> Any:
        grammar = options.get("grammar")
        given = defaults | options
        neutral = all(given.get(k) == v for k, v in _NEUTRAL.items())
        if grammar is not None and neutral and enabled():
            return GreedyUnderGrammar(llama._model.vocab, grammar)
        return original(**options)

    llama._init_sampler = init_sampler
