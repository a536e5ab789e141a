"""Which key names label a secret: ``DB_PASS``, ``apiKey``, ``aws_secret_access_key``.

A password looks like anything, so the key before it decides, by its parts in any case
and quoting; words like ``max_tokens`` or ``token_url`` describe a secret without holding
one. Used for ``key=value`` text (:mod:`tao.redact.labels`) and JSON keys
(:mod:`tao.redact.structured`).
"""

from __future__ import annotations

import re
from functools import lru_cache

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
NOT_VALUES = frozenset(
    {"none", "null", "nil", "true", "false", "undefined", "yes", "no", "str", "string", "int",
     "bytes", "bool", "any", "optional", "secretstr", "required", "redacted", "***", "...", "-"}
)  # fmt: skip
_KEY_SPLIT = re.compile(r"[_.\-\s]+|(?<=[a-z0-9])(?=[A-Z])")


@lru_cache(maxsize=4096)
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
