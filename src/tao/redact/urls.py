"""Secrets in URLs: ``scheme://user:password@host`` and signed-URL query values.

A signed URL carries its own credential: AWS ``X-Amz-Signature`` / ``X-Amz-Credential``
/ ``X-Amz-Security-Token``, GCS ``X-Goog-Signature``, Azure SAS ``sig=``, and the usual
``token=``, ``access_token=``, ``key=``, ``code=`` parameters. Each value is hidden; the
URL's shape stays readable.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from urllib.parse import SplitResult, urlsplit, urlunsplit

from tao.redact.marker import REDACTED, Span

#: A text redactor (:func:`tao.redact.redact`), passed in so this module needs no scanner.
RedactText = Callable[[str], str]

#: ``://user:password@``: the password, up to the ``@`` (a password written with a raw
#: ``#``, ``?`` or ``/``, as DSNs often are, still ends there; a port followed by a path is
#: not a password). The password stops at the next ``://``, where the next attempt
#: starts: so each character is read by one attempt, however long the password. (Bounded
#: at 512 characters instead, text made of ``://a:b`` repeated read 512 characters at
#: every scheme mark: 0.7 MB/s.)
_USERINFO = re.compile(r"://[^\s/?#@:]{0,256}+:(?!\d{1,5}+[/?#])((?:[^\s@:]++|:(?!//))++)@")
#: A query parameter whose name says it holds a credential, and its value.
_QUERY = re.compile(
    r"[?&;]((?i:x-amz-(?:signature|credential|security-token)|x-goog-(?:signature|credential)"
    r"|sig|signature|token|access_token|id_token|refresh_token|auth|auth_token|key|api_key"
    r"|apikey|secret|client_secret|password|pass|pwd|code|sas|se?ssion|sessionid))"
    r"=([^&#\s\"'<>]{1,4000}+)"
)


def url_spans(text: str) -> Iterator[Span]:
    """URL passwords and signed-URL query values in ``text``."""
    if "://" in text:
        for match in _USERINFO.finditer(text):
            yield match.span(1)
    if "=" in text:
        for match in _QUERY.finditer(text):
            yield match.span(2)


def redact_url_with(url: str, redact: RedactText) -> str:
    """``url`` with its password (and secret-looking query values) replaced: safe to store.

    ``https://user:pw@host/v1?api_key=X`` → ``https://user:[REDACTED]@host/v1?api_key=[REDACTED]``;
    a URL that does not parse is redacted as text.
    """
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return redact(url)
    if password:
        host = parts.netloc.rpartition("@")[2]
        user = parts.username or ""
        parts = SplitResult(
            parts.scheme, f"{user}:{REDACTED}@{host}", parts.path, parts.query, parts.fragment
        )
    return redact(urlunsplit(parts))
