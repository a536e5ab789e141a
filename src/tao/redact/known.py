"""Values known to be secret, hidden verbatim wherever they appear (SPEC S5, S8; issue 26).

A secret tao itself handed out has no shape to find it by: ``--pass-env MY_SETTING``
gives a sandboxed test ``MY_SETTING=Zq7hunter2``, and a test that prints the bare value
(``print(os.environ["MY_SETTING"])``, an assertion message, a traceback's locals) puts
``Zq7hunter2`` in its output with no label before it. Every channel text leaves tao
through (the observation the model reads, the run log, ``--json``, the web page, spans,
eval records) passes :func:`tao.redact.redact`, which asks this module first, so one
registry covers them all.

What is known, registered when a run is set up (:func:`remember_environment`), and the
process's own secret-named variables on the first redaction of any process (a ``tao
serve --queue`` storing a posted task, ``tao ui`` or a worker showing a run, ``tao
submit``: none of them sets a run up before it writes or shows text):

* the value of every variable passed with ``--pass-env`` (the user chose to hand it
  to a child), and the password of one that is a URL;
* the value of every variable of tao's own environment whose *name* labels a secret
  (``OPENAI_API_KEY``, ``DB_PASS``, ``MY_TOKEN``: :func:`tao.redact.keys.secret_key`),
  which an in-process Python tool can read and print; paths (``SSH_AUTH_SOCK``) are left;
* an API key given in code (``Agent(api_key=...)``).

Values shorter than :data:`MIN_CHARS` are not registered: hiding every ``true`` or
``8080`` would blank ordinary text, and such a value is no secret worth the name.
Matching is exact and case-sensitive, with ``str.find`` per value (C speed; the registry
holds a handful of values), so it stays linear in the text. The value's disguises
(base64 twice, base32, hex with ``:``, URL-encoded, reversed, spaced out, cut across JSON
strings) are computed once when it is registered and searched for the same way
(:mod:`tao.redact.known_forms`).

    >>> remember(["Zq7hunter2horse"])
    >>> known_spans("value is Zq7hunter2horse.")
    [(9, 24)]
    >>> forget_all()
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from tao.redact.keys import secret_key
from tao.redact.known_forms import find_all, form_spans, value_forms
from tao.redact.marker import Span

#: The shortest value registered.
MIN_CHARS = 8
#: At most this many values are kept (the first ones stay): a bound on the work per text.
MAX_VALUES = 256

_lock = threading.Lock()
_values: tuple[str, ...] = ()
#: The encoded, reversed, squeezed forms of every value (tao.redact.known_forms), made once.
_forms: tuple[str, ...] = ()
_generation = 0
#: Whether this process's own environment was read (once, at the first redaction).
_environment_read = False


def remember(values: Iterable[str | None]) -> None:
    """Hide each of ``values`` (8 characters or more) from now on, in every text."""
    global _values, _forms, _generation
    fresh = [v for v in values if v is not None and len(v.strip()) >= MIN_CHARS]
    with _lock:
        added = tuple(v for v in dict.fromkeys(fresh) if v not in _values)
        if added:
            _values = (_values + added)[:MAX_VALUES]
            _forms = tuple(dict.fromkeys(f for v in _values for f in value_forms(v)))
            _generation += 1


def remember_environment(pass_env: Iterable[str], environ: Mapping[str, str] | None = None) -> None:
    """Register the secrets of ``environ`` (tao's own by default): the values passed to
    children by name, and every value under a secret-labelling name (see the module)."""
    source = os.environ if environ is None else environ
    values: list[str] = []
    for name in pass_env:
        if name in source:
            values.extend(_with_password(source[name]))
    for name, value in source.items():
        if secret_key(name) and not value.startswith("/"):
            values.extend(_with_password(value))
    remember(values)


def _with_password(value: str) -> list[str]:
    """``value``, and the password inside it when it is a URL with one."""
    found = [value]
    if "://" in value and "@" in value:
        try:
            password = urlsplit(value.strip()).password
        except ValueError:
            password = None
        if password:
            found.append(password)
    return found


def _read_environment_once() -> None:
    """Register the secret-named variables of this process's environment, once.

    Registration at run set-up alone left every other writer blind: ``tao serve
    --queue`` stored a posted task holding ``$MY_API_KEY``'s value verbatim, because no
    run was set up in that process. Reading the environment at the first redaction covers
    every process, whatever its entry point; one pass over ``os.environ``, once."""
    global _environment_read
    if not _environment_read:
        _environment_read = True
        remember_environment(())


def generation() -> int:
    """A number that changes whenever a value is added (so a memo of old results is stale)."""
    _read_environment_once()
    return _generation


def known_spans(text: str) -> list[Span]:
    """Every place in ``text`` where a registered value appears."""
    _read_environment_once()
    spans = find_all(text, _values)
    spans.extend(form_spans(text, _forms))  # the value itself is found squeezed too
    return sorted(set(spans))


def forget_all() -> None:
    """Drop every registered value (for tests that need a clean registry): as in a fresh
    process, the environment is read again at the next redaction."""
    global _values, _forms, _generation, _environment_read
    with _lock:
        _values = ()
        _forms = ()
        _generation += 1
        _environment_read = False


__all__ = [
    "MAX_VALUES",
    "MIN_CHARS",
    "forget_all",
    "generation",
    "known_spans",
    "remember",
    "remember_environment",
]
