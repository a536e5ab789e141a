"""Secrets never reach the model or the run log (SPEC S5).

Tool output is scanned for the shapes credentials take — provider API keys,
cloud and forge tokens, private-key blocks, bearer tokens, ``KEY=value`` lines
of env files, passwords in URLs — and each is replaced by ``[REDACTED]``
before the observation enters the transcript or the trace.

    >>> redact("OPENAI_API_KEY=sk-proj-abc123def456ghi789jkl012")
    'OPENAI_API_KEY=[REDACTED]'
"""

from __future__ import annotations

import re

REDACTED = "[REDACTED]"

_PATTERNS: tuple[re.Pattern[str], ...] = (
    # PEM private keys, whole block (RSA, EC, OPENSSH, PGP, ...).
    re.compile(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?s:.*?)-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
    ),
    re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}"),  # Anthropic
    re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),  # OpenAI
    re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"),  # Google API key
    re.compile(r"\bya29\.[0-9A-Za-z_\-]{20,}"),  # Google OAuth access token
    re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b"),  # AWS access key id
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"),  # GitHub tokens
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}\b"),
    re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}\b"),  # GitLab
    re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),  # Slack
    re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"),  # Hugging Face
    re.compile(r"\b(?:sk|rk)_live_[A-Za-z0-9]{20,}\b"),  # Stripe
    re.compile(r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),  # JWT
)
#: All of the above in one pass over the text (tool output can be long).
_SECRET = re.compile("|".join(f"(?:{p.pattern})" for p in _PATTERNS))
# Keep the label, hide the value: "Authorization: Bearer X", "aws_secret_access_key = X".
_LABELLED: tuple[re.Pattern[str], ...] = (
    re.compile(r"(\b[Bb]earer\s+)[A-Za-z0-9._~+/\-]{8,}=*"),
    re.compile(
        r"((?:[Aa]uthorization|[Xx]-[Aa]pi-[Kk]ey|[Aa]pi-[Kk]ey)\s*[:=]\s*)(?![Bb]earer\b)\S+"
    ),
    # KEY=value lines of env files and shell exports, for names that say "secret".
    re.compile(
        r"(?m)^(\s*(?:export\s+)?[A-Z0-9_.\-]*"
        r"(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|PWD|CREDENTIALS?|AUTH|PRIVATE)"
        r"[A-Z0-9_.\-]*\s*[=:]\s*)(?!\[REDACTED\])(\S.*)$"
    ),
    re.compile(r"(://[^/\s:@]+:)[^@\s/]+(@)"),  # passwords in URLs
)


def redact(text: str) -> str:
    """Replace every secret-shaped substring of ``text`` by ``[REDACTED]``."""
    text = _SECRET.sub(REDACTED, text)
    for labelled in _LABELLED:
        text = labelled.sub(_keep_label, text)
    return text


def _keep_label(match: re.Match[str]) -> str:
    tail = match.group(2) if match.lastindex and match.lastindex >= 2 else ""
    suffix = tail if tail == "@" else ""
    return f"{match.group(1)}{REDACTED}{suffix}"
