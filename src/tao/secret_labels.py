"""Secrets known by their label, not their shape: ``password = …``, ``DB_PASS: …``,
``"api_key": "…"``, ``export TOKEN=…``, and the password in ``scheme://user:pw@host``.

Plugins recognise a token by what it looks like; a password looks like anything, so
here the key before it decides (its parts, in any case and quoting). Used by
:func:`tao.redact.find_secrets`, which hands each place a label word was found.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

Span = tuple[int, int]
REDACTED = "[REDACTED]"


#: Words that make a key name secret when they are one of its parts (``DB_PASS``, ``authToken``).
_KEY_WORDS = frozenset(
    {"pass", "pwd", "pw", "passwd", "password", "token", "auth", "dsn", "jwt", "cookie", "bearer",
     "authorization", "sas", "sig", "signature", "cred", "creds", "credentials", "session",
     "sessionid", "sid", "secret", "secrets", "otp", "totp", "hmac", "salt"}
)  # fmt: skip
#: Parts that contain one of these anywhere are secret (``client_secret``, ``apikey``).
_KEY_STRONG = (
    "password", "passwd", "passphrase", "secret", "credential", "apikey", "accesskey",
    "privatekey", "secretkey", "authkey", "signingkey", "encryptionkey", "masterkey",
    "accountkey", "connectionstring", "webhook",
)  # fmt: skip
#: ``KEY`` is secret after these parts: ``api_key``, ``ACCESS-KEY``, ``privateKey``.
_KEY_OWNERS = frozenset(
    {"api", "access", "private", "secret", "signing", "encryption", "master", "account", "client",
     "auth", "service", "db", "database", "storage", "app", "consumer", "ssh", "deploy",
     "license", "subscription", "shared", "admin", "root", "hmac", "session", "encrypt", "x"}
)  # fmt: skip
#: A part like these makes the key describe a secret, not hold one (``token_url``, ``max_tokens``).
_KEY_NOT = frozenset(
    {"count", "max", "min", "num", "limit", "total", "usage", "type", "kind", "length", "len",
     "size", "url", "uri", "endpoint", "path", "file", "filename", "dir", "name", "header",
     "format", "expiry", "expires", "expiration", "ttl", "timeout", "enabled", "required",
     "method", "mode", "prefix", "field", "param", "provider", "scheme", "host", "port", "user",
     "username", "email", "policy", "hint", "label", "used", "rotation", "algorithm", "id"}
)  # fmt: skip
#: Values that are not secrets: types, empty words, placeholders.
_NOT_VALUES = frozenset(
    {"none", "null", "nil", "true", "false", "undefined", "yes", "no", "str", "string", "int",
     "bytes", "bool", "any", "optional", "secretstr", "required", "redacted", "***", "...", "-"}
)  # fmt: skip
_LABEL = re.compile(
    r"(?i:pass|pwd|pw|secret|token|key|auth|cred|dsn|jwt|cookie|session"
    r"|bearer|sig|webhook|sas|sid|otp|hmac|salt|connection)"
)
_KEY_SPLIT = re.compile(r"[_.\-\s]+|(?<=[a-z0-9])(?=[A-Z])")
_KEY_TAIL = re.compile(r"[A-Za-z0-9_.\-]{0,100}")
_KEY_HEAD = re.compile(r"[A-Za-z0-9_.\-]*\Z")
_ASSIGN = re.compile(r"""["']?\]?[ \t]*(:=|=>|=|:)[ \t]*(?![=:])""")
_VALUE = re.compile(
    r'"((?:[^"\\\n]|\\.){1,1000})"'
    r"|'([^'\n]{1,1000})'"
    r"|`([^`\n]{1,1000})`"
    r"|((?i:(?:bearer|basic|token|digest)[ \t]+)?[^\s\"'`,;&<>(){}\[\]]{1,1000})"
)
_LINE_START = re.compile(r"[ \t]*(?:export[ \t]+|[-+][ \t]*)?[\"']?")
_CODE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[$<%{]|\w+\s*[(\[]|.*\s=\s|.*[()]")
_USERINFO = re.compile(r"[^\s/?#@:]{0,256}:([^\s/?#]{1,512})@")


def secret_key(key: str) -> bool:
    """Whether a key name labels a secret: ``DB_PASS``, ``apiKey``, ``aws_secret_access_key``."""
    parts = [part.lower() for part in _KEY_SPLIT.split(key.strip("\"'")) if part]
    if not parts or any(part in _KEY_NOT for part in parts):
        return False
    joined = "".join(parts)
    if any(word in joined for word in _KEY_STRONG):
        return True
    for index, part in enumerate(parts):
        if part in _KEY_WORDS or part.endswith("token"):
            return True
        if part in ("key", "keys") and index and parts[index - 1] in _KEY_OWNERS:
            return True
    return False


def _labelled_at(text: str, hit_start: int, hit_end: int) -> Iterator[Span]:
    """The value labelled by the key around ``text[hit_start:hit_end]``, if that key is secret."""
    tail = _KEY_TAIL.match(text, hit_end)
    end = tail.end() if tail else hit_end
    head = _KEY_HEAD.search(text, max(0, hit_start - 100), hit_start)
    start = head.start() if head else hit_start
    assign = _ASSIGN.match(text, end)
    if assign is not None and secret_key(text[start:end]):
        span = _value_span(text, start, assign.end())
        if span is not None:
            yield span


def _value_span(text: str, key_start: int, position: int) -> Span | None:
    """The span of the value at ``position``; a bare value opening a line runs to its end."""
    match = _VALUE.match(text, position)
    if match is None:
        return None
    group = next(index for index in range(1, 5) if match.group(index) is not None)
    start, end = match.span(group)
    if group == 4:
        line_start = text.rfind("\n", 0, key_start) + 1
        line_end = text.find("\n", end)
        rest = text[start : len(text) if line_end < 0 else line_end].split(" #")[0].rstrip()
        if _LINE_START.fullmatch(text, line_start, key_start) and not _CODE.match(rest):
            end = start + len(rest)
        elif _CODE.match(text[start : end + 1]):
            return None
    value = text[start:end].strip()
    if not value or value.lower() in _NOT_VALUES or REDACTED in value:
        return None
    return start, end


def _url_credentials_at(text: str, position: int) -> Iterator[Span]:
    """The password of the ``scheme://user:password@host`` whose ``://`` ends at ``position``."""
    match = _USERINFO.match(text, position)
    if match:
        yield match.span(1)
