"""Secrets never reach the model, the run log or a screen (SPEC S5, S8).

Detection is layered, because no single list of regular expressions keeps up:

1. detect-secrets' maintained plugins (AWS, Azure, basic-auth URLs, Cloudant,
   Discord, GitHub, GitLab, IBM, JWT, Mailchimp, npm, OpenAI, private keys, PyPI,
   SendGrid, Slack, Softlayer, Square, Stripe, Telegram, Twilio, Artifactory),
   plus its keyword detector on short lines; their regular expressions are used
   directly, on the lines (or 1,000-character windows of long lines) that hold
   a candidate, which keeps the plugins' worst cases bounded.
2. Shapes the plugins miss: Anthropic and new OpenAI keys, Stripe test keys,
   Google keys, npm/PyPI/Hugging Face tokens, Slack webhooks, bearer tokens and
   whole PEM private-key blocks.
3. Labelled secrets: ``key=value``, ``key: value`` (YAML), ``"key": "value"``
   (JSON), ``export KEY='value'``, in any case and quoting, for key names made
   of words like password, secret, token, api key, credential, auth, DSN; and
   credentials in URLs (``scheme://user:pass@host``).

Each found value is replaced by ``[REDACTED]``; labels stay so the text still
reads. A cheap pre-check lets text with no candidate skip all of it, since
redaction runs on every observation.

    >>> redact("OPENAI_API_KEY=sk-proj-abc123def456ghi789jkl012")
    'OPENAI_API_KEY=[REDACTED]'
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Iterator
from functools import cache, lru_cache
from urllib.parse import SplitResult, urlsplit, urlunsplit

from tao.secret_labels import REDACTED, Span, _labelled_at, _url_credentials_at


class Rule:
    """A detector: needles (lower-case substrings, one of which must appear), whether it also
    needs a run of 20 token characters, and its expressions: a detect-secrets plugin's
    (``module.Class`` under ``detect_secrets.plugins``) and shapes it misses.

    The plugins are imported when a text first holds one of a rule's needles, not with
    tao: detect-secrets brings ``requests`` along, a third of ``import tao``'s time.
    """

    __slots__ = ("_extra", "_patterns", "_plugin", "long", "needles")

    def __init__(self, needles: str, plugin: str | None, *extra: str, long: bool = False) -> None:
        self.needles = tuple(needles.split())
        self.long = long
        self._plugin, self._extra = plugin, extra
        self._patterns: tuple[re.Pattern[str], ...] | None = None

    @property
    def patterns(self) -> tuple[re.Pattern[str], ...]:
        if self._patterns is None:  # built twice by two threads at worst: the same tuple
            plugin = _plugin_patterns(self._plugin) if self._plugin is not None else ()
            self._patterns = (*plugin, *(re.compile(x) for x in self._extra))
        return self._patterns


def _plugin_patterns(plugin: str) -> tuple[re.Pattern[str], ...]:
    if plugin == "keyword":  # its quotes-required set (see KEYWORD)
        return tuple(_keyword_groups())
    module, name = plugin.rsplit(".", 1)
    detector = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)
    return tuple(detector().denylist)


@cache
def _keyword_groups() -> dict[re.Pattern[str], int]:
    """detect-secrets' keyword expressions, each with the group that holds the value."""
    from detect_secrets.plugins import keyword

    return dict(keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP)


_JWT = r"eyJ[A-Za-z0-9_\-]{4,}+\.[A-Za-z0-9_\-]{4,}+\.?[A-Za-z0-9_\-+/=]*+"
_XML = (
    r"<([\w:\-]{0,40}(?i:password|passwd|secret|token|api_?key)[\w:\-]{0,40})>"
    r"([^<\n]{1,1000})(?=</\1>)"
)
#: A whole PEM private-key block (the plugin finds only its first line); one without
#: its END line (cut output) is taken up to where the key material stops.
_PEM = re.compile(
    r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY[ A-Z]{0,10}-----"
    r"(?:[\s\S]{0,8192}?-----END[ A-Z0-9]{0,40}PRIVATE KEY[ A-Z]{0,10}-----"
    r"|[A-Za-z0-9+/=\s:,\-]{0,8192})"
)
#: detect-secrets' plugins, each with the shapes it misses beside it. Left out: high-entropy
#: strings (hashes, commit ids) and public IPs, which are not credentials and would blind
#: the model, and Artifactory's retired API keys, whose short pattern fires on ordinary words.
RULES: tuple[Rule, ...] = (
    Rule("a3t abia acca akia asia aws", "aws.AWSKeyDetector"),
    Rule("accountkey=", "azure_storage_key.AzureStorageKeyDetector"),
    Rule("://", "basic_auth.BasicAuthDetector"),
    Rule("cloudant clou cl_ cl- clkey clpw clpass cltoken clapi", "cloudant.CloudantDetector"),
    Rule(".", "discord.DiscordBotTokenDetector", long=True),
    Rule(
        "ghp_ gho_ ghu_ ghs_ ghr_ github_pat_",
        "github_token.GitHubTokenDetector",
        r"github_pat_[A-Za-z0-9_]{22,}|gh[pousr]_[A-Za-z0-9]{30,}",
    ),
    Rule(
        "glpat- gldt- glft- glsoat- glrt- gr1348941 glcbt- glimt- glptt- glagent- gloas-",
        "gitlab_token.GitLabTokenDetector",
    ),
    Rule("key pwd pass token", "ibm_cloud_iam.IbmCloudIamDetector", long=True),
    Rule("secret", "ibm_cos_hmac.IbmCosHmacDetector", long=True),
    Rule("eyj", "jwt.JwtTokenDetector", _JWT),
    Rule("-us", "mailchimp.MailchimpDetector", long=True),
    Rule("_authtoken npm_", "npm.NpmDetector", r"npm_[A-Za-z0-9]{36}"),
    Rule(
        "t3blbkfj sk-",
        "openai.OpenAIDetector",
        r"sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",
    ),
    Rule("private putty", "private_key.PrivateKeyDetector"),
    Rule("pypi-", "pypi_token.PypiTokenDetector", r"pypi-[A-Za-z0-9_\-]{50,}"),
    Rule("sg.", "sendgrid.SendGridDetector", r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"),
    Rule(
        "xox hooks.slack",
        "slack.SlackDetector",
        r"xox[abposre]-[A-Za-z0-9\-]{10,}",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]+",
    ),
    Rule("softlayer sl", "softlayer.SoftlayerDetector", long=True),
    Rule("sq0csp-", "square_oauth.SquareOAuthDetector"),
    Rule("k_live_ k_test_", "stripe.StripeDetector", r"\b[sr]k_(?:live|test)_[0-9A-Za-z]{10,}"),
    Rule(":", "telegram_token.TelegramBotTokenDetector", long=True),
    Rule("ac sk", "twilio.TwilioKeyDetector", long=True),
    Rule("aiza ya29.", None, r"AIza[0-9A-Za-z_\-]{35}", r"ya29\.[0-9A-Za-z_\-]{20,}"),
    Rule("hf_", None, r"hf_[A-Za-z0-9]{30,}"),
    Rule("discord", None, r"discord(?:app)?\.com/api/webhooks/[0-9]+/[A-Za-z0-9_\-]+"),
    Rule("bearer", None, r"(?i:bearer)[ \t]+[A-Za-z0-9._~+/\-]{12,}=*"),
    Rule("</", None, _XML),
)
#: detect-secrets' keyword detector (its default, quotes-required set) and which group
#: holds the value; unquoted config values are :func:`_labelled_at`'s job, since its
#: config set reads ``def f(password: str, ...)`` as a secret. Run on short lines only.
KEYWORD = Rule("key pass pwd secret contras", "keyword")
#: Words that start a labelled secret (``DB_PASS=``, ``"apiKey":``), found in lower case.
_LABEL_WORDS = (
    "pass", "pwd", "pw", "secret", "token", "key", "auth", "cred", "dsn", "jwt", "cookie",
    "session", "bearer", "signature", "webhook", "sas", "hmac", "salt", "connection",
)  # fmt: skip
#: Longest piece of a line the plugins see at once, and the longest line the keyword
#: detector sees: some of their expressions backtrack badly on long, repetitive lines.
_WINDOW = 1_000
_KEYWORD_LINE = 300
_LONG_RUN = re.compile(r"[A-Za-z0-9_\-+/=]{20}")
_SHORT_RULES = (*(rule for rule in RULES if not rule.long), KEYWORD)
_LONG_RULES = tuple(rule for rule in RULES if rule.long)
_BY_NEEDLE: dict[str, list[Rule]] = {}
for _r in _SHORT_RULES:
    for _n in _r.needles:
        _BY_NEEDLE.setdefault(_n, []).append(_r)
for _n in _LABEL_WORDS:
    _BY_NEEDLE.setdefault(_n, [])
_LABEL_SET = frozenset(_LABEL_WORDS)
_BY_FIRST: dict[str, list[str]] = {}
for _n in [*_BY_NEEDLE]:
    _BY_FIRST.setdefault(_n[0], []).append(_n)


_Node = dict[str, "_Node"]


def _trie(words: Iterable[str]) -> str:
    """One expression for ``words``, factored by prefix: ``a(?:ws|kia)|k(?:ey)``.

    A flat alternation of some seventy needles is tried needle by needle at every
    position; factored, each position costs one look at its first character.
    """
    root: _Node = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def emit(node: _Node) -> str:
        branches = [re.escape(char) + emit(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body

    return emit(root)


#: Every needle in one factored pattern: most observations hold none, and one C scan says so.
_ANY_NEEDLE = re.compile(_trie([*_BY_NEEDLE, "private key"]))
#: Texts redacted lately: a step's observation is redacted for the model, then again for the
#: log and the screen; the same string is scanned once. Long texts are not kept.
_MEMO_CHARS = 8_192


def redact(text: str) -> str:
    """Replace every secret in ``text`` by ``[REDACTED]``; text without any comes back as is."""
    if len(text) <= _MEMO_CHARS:
        return _redact_memo(text)
    return _redact(text)


@lru_cache(maxsize=512)
def _redact_memo(text: str) -> str:
    return _redact(text)


def _redact(text: str) -> str:
    spans = find_secrets(text)
    if not spans:
        return text
    parts: list[str] = []
    last = 0
    for start, end in spans:
        parts.append(text[last:start])
        parts.append(REDACTED)
        last = end
    parts.append(text[last:])
    return "".join(parts)


def _lowered(text: str) -> str:
    lowered = text.lower()
    if len(lowered) != len(text):  # a few non-ASCII letters grow when lowered
        lowered = text.translate(_ASCII_LOWER)
    return lowered


def _occurrences(lowered: str, first: re.Match[str]) -> Iterator[tuple[str, int]]:
    """Every needle at every place it starts (needles inside others too), from ``first`` on."""
    found: re.Match[str] | None = first
    while found is not None:
        position = found.start()
        for needle in _BY_FIRST[lowered[position]]:
            if lowered.startswith(needle, position):
                yield needle, position
        found = _ANY_NEEDLE.search(lowered, position + 1)


def find_secrets(text: str) -> list[Span]:
    """The sorted, merged spans of ``text`` that hold secrets (empty for most text)."""
    lowered = _lowered(text)
    first = _ANY_NEEDLE.search(lowered)
    if first is None and _LONG_RUN.search(text) is None:
        return []  # the common case, in two scans instead of one per needle
    spans: list[Span] = []
    if "private key" in lowered:
        spans.extend(match.span() for match in _PEM.finditer(text))
    lines: dict[Rule, set[int]] = {}
    for needle, position in _occurrences(lowered, first) if first is not None else ():
        for rule in _BY_NEEDLE[needle]:
            lines.setdefault(rule, set()).add(position)
        end = position + len(needle)
        if needle in _LABEL_SET:
            spans.extend(_labelled_at(text, position, end))
        if needle == "://":
            spans.extend(_url_credentials_at(text, end))
    for run in _LONG_RUN.finditer(text):
        for rule in _LONG_RULES:
            lines.setdefault(rule, set()).add(run.start())
    for rule, positions in lines.items():
        for start, line in _lines(text, positions):
            spans.extend((start + a, start + b) for a, b in _rule_spans(rule, line))
    return _merge(span for span in spans if span[1] > span[0])


_ASCII_LOWER = {code: code + 32 for code in range(65, 91)}


def _lines(text: str, positions: Iterable[int]) -> Iterator[tuple[int, str]]:
    """Each line holding one of ``positions`` once, cut into overlapping windows if long."""
    done = -1
    for position in sorted(positions):
        if position <= done:
            continue
        start = text.rfind("\n", 0, position) + 1
        end = text.find("\n", position)
        done = end = len(text) if end < 0 else end
        while True:
            yield start, text[start : min(end, start + _WINDOW)]
            if start + _WINDOW >= end:
                break
            start += _WINDOW - 200


def _rule_spans(rule: Rule, line: str) -> Iterator[Span]:
    """Where one detector finds values in ``line`` (its needles checked on the line first)."""
    lowered = line.lower()
    if not any(needle in lowered for needle in rule.needles):
        return
    if rule.long and not _LONG_RUN.search(line):
        return
    if rule is KEYWORD:  # it needs a quoted value
        if len(line) <= _KEYWORD_LINE and ("'" in line or '"' in line or "`" in line):
            groups = _keyword_groups()
            for pattern in rule.patterns:
                match = pattern.search(line)
                if match and match.group(groups[pattern]):
                    yield match.span(groups[pattern])
        return
    for pattern in rule.patterns:
        for match in pattern.finditer(line):
            yield _secret_group(match)


def redact_url(url: str) -> str:
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


def _secret_group(match: re.Match[str]) -> Span:
    """The plugin's capture group when it holds the value, else the whole match.

    ``aws...'(KEY)'`` and ``://user:(PASS)@`` capture the value near the end;
    ``(ghp|gho)_...`` captures only the prefix, so the whole token is taken.
    """
    for index in range(1, (match.re.groups or 0) + 1):
        start, end = match.span(index)
        if start > match.start() and match.end() - end <= 2 and end > start:
            return start, end
    return match.span()


def _merge(spans: Iterable[Span]) -> list[Span]:
    merged: list[Span] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
