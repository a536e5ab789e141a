"""detect-secrets' maintained plugins, run where they stay linear (SPEC S8, S11).

Their expressions are used as they are, but only on bounded windows: each rule looks
for its needles (lower-case literals one of which its secrets must hold), scans the
window of :data:`WINDOW` characters around the first one it finds, and looks for the
next needle after that window. A rule thus reads each character a bounded number of
times, however many needles a crafted text holds, and no expression ever sees more
than a window (some backtrack badly on long, repetitive lines).

The plugins are imported when a text first holds one of a rule's needles, not with
tao: detect-secrets brings ``requests`` along, a third of ``import tao``'s time.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from functools import cache

from tao.redact.marker import Span
from tao.redact.runs import TOKEN, Classes, Needles

#: Characters a rule's expressions see at once, and how far before a needle they start.
WINDOW = 2_000
_BEFORE = 120
#: Longest line the keyword detector sees (its expressions backtrack over long ones).
_KEYWORD_LINE = 300
#: A long rule's secrets are runs of at least this many of these characters.
LONG_RUN = 20
_LONG_CHARS = TOKEN + "="
_LONG_NEEDLE = b"x" * LONG_RUN
#: A long run's start in a class map: a character outside the class, then the run.
_RUN_START = b"." + _LONG_NEEDLE
#: The token run a rule's secret holds at least (its token's fixed part is 20 or longer).
_RUN = 20


class Rule:
    """A detector: its needles, whether it also needs a run of 20 token characters, and a
    detect-secrets plugin's expressions (``module.Class`` under ``detect_secrets.plugins``).

    ``run``: every secret the rule's expressions take holds a run of at least this many
    token characters (``AKIA`` and 16 more, ``ghp_`` and 36 more), so a window without one
    is not scanned. A crafted text of near-miss prefixes (``AKIA ghp_ xoxb-``, issue 26)
    then costs one ``bytes.find`` per window instead of every rule's expressions."""

    __slots__ = ("_patterns", "_plugin", "long", "needles", "run")

    def __init__(self, needles: str, plugin: str, *, long: bool = False, run: int = 0) -> None:
        self.needles = tuple(needles.split())
        self.long = long
        self.run = b"x" * run
        self._plugin = plugin
        self._patterns: tuple[re.Pattern[str], ...] | None = None

    @property
    def patterns(self) -> tuple[re.Pattern[str], ...]:
        if self._patterns is None:  # built twice by two threads at worst: the same tuple
            module, name = self._plugin.rsplit(".", 1)
            plugin = importlib.import_module(f"detect_secrets.plugins.{module}")
            self._patterns = tuple(getattr(plugin, name)().denylist)
        return self._patterns


#: detect-secrets' plugins. Left out: high-entropy strings (hashes, commit ids) and public
#: IPs, which are not credentials and would blind the model, and Artifactory's retired API
#: keys, whose short pattern fires on ordinary words. ``long``: its secrets are long runs.
RULES: tuple[Rule, ...] = (
    Rule("a3t abia acca akia asia aws", "aws.AWSKeyDetector", run=_RUN),
    Rule("accountkey=", "azure_storage_key.AzureStorageKeyDetector", run=_RUN),
    Rule("://", "basic_auth.BasicAuthDetector"),
    Rule(
        "cloudant clou cl_ cl- clkey clpw clpass cltoken clapi",
        "cloudant.CloudantDetector",
        run=_RUN,
    ),
    Rule(".", "discord.DiscordBotTokenDetector", long=True),
    Rule("ghp_ gho_ ghu_ ghs_ ghr_ github_pat_", "github_token.GitHubTokenDetector", run=_RUN),
    Rule(
        "glpat- gldt- glft- glsoat- glrt- gr1348941 glcbt- glimt- glptt- glagent- gloas-",
        "gitlab_token.GitLabTokenDetector",
        run=_RUN,
    ),
    Rule("key pwd pass token", "ibm_cloud_iam.IbmCloudIamDetector", long=True),
    Rule("secret", "ibm_cos_hmac.IbmCosHmacDetector", long=True),
    Rule("eyj", "jwt.JwtTokenDetector"),
    Rule("-us", "mailchimp.MailchimpDetector", long=True),
    Rule("_authtoken npm_", "npm.NpmDetector"),
    Rule("t3blbkfj", "openai.OpenAIDetector", run=_RUN),
    Rule("private putty", "private_key.PrivateKeyDetector"),
    Rule("pypi-", "pypi_token.PypiTokenDetector", run=_RUN),
    Rule("sg.", "sendgrid.SendGridDetector", run=_RUN),
    Rule("xox hooks.slack", "slack.SlackDetector", run=16),
    Rule("softlayer sl", "softlayer.SoftlayerDetector", long=True),
    Rule("sq0csp-", "square_oauth.SquareOAuthDetector", run=_RUN),
    Rule("k_live_ k_test_", "stripe.StripeDetector", run=_RUN),
    Rule(":", "telegram_token.TelegramBotTokenDetector", long=True),
    Rule("ac sk", "twilio.TwilioKeyDetector", long=True),
)
#: The keyword detector's needles; its value must be quoted, on a short line.
_KEYWORD_NEEDLES = ("key", "pass", "pwd", "secret", "contras")
_QUOTES = ("'", '"', "`")


def plugin_spans(text: str, lowered: str, classes: Classes | None = None) -> Iterator[Span]:
    """Every value a plugin finds, each rule scanning bounded windows around its needles.

    A ``long`` rule's needles (``.``, ``:``) are everywhere, so it looks at the runs of
    20 token characters instead, found once for all of them."""
    size = len(text)
    classes = classes or Classes(text)
    runs = classes.map(_LONG_CHARS)
    tokens = classes.map(TOKEN)
    for rule in _candidates(lowered, tokens, runs.find(_LONG_NEEDLE) >= 0):
        needles = Needles(rule.needles, lowered) if rule.long else None
        for start in _windows(rule, lowered, runs):
            end = min(size, start + WINDOW)
            if rule.run and tokens.find(rule.run, start, end) < 0:
                continue  # no token long enough for this rule's secrets
            if needles is not None:  # a long run's window: does it hold a needle too?
                hit = needles.search(start)
                if hit is None:
                    break  # none in the rest of the text
                if hit[0] >= end:
                    continue
            window = text[start:end]  # a needle's own window holds it
            for pattern in rule.patterns:
                for match in pattern.finditer(window):
                    a, b = secret_group(match)
                    yield start + a, start + b
    yield from _keyword_spans(text, lowered)


def _candidates(lowered: str, tokens: bytes, runs: bool) -> Iterator[Rule]:
    """The rules that may find something in the text: a needle of theirs is in it (or,
    for a ``long`` rule, a long run is), and so is a token run as long as their secrets.
    Most observations are short and hold few needles, and a rule's scan has a fixed cost
    (about 5 us), so this is what a step pays for the plugins."""
    has_run: dict[bytes, bool] = {}
    for rule in RULES:
        if rule.long:
            if runs:
                yield rule
            continue
        if rule.run:
            if rule.run not in has_run:
                has_run[rule.run] = tokens.find(rule.run) >= 0
            if not has_run[rule.run]:
                continue
        if any(needle in lowered for needle in rule.needles):
            yield rule


def _windows(rule: Rule, lowered: str, runs: bytes) -> Iterator[int]:
    """Where ``rule``'s windows start: around each needle (or start of a long run, in the
    class map ``runs``), and the next one looked for after the window, so that windows
    overlap by :data:`_BEFORE` at most.

    A long run's start is found by ``bytes.find`` of a non-member and 20 members, so a
    text of thousands of runs costs a C search per window, not a Python step per run
    (issue 26 round 6)."""
    size = len(lowered)
    if rule.long:
        at = 0 if runs.startswith(_LONG_NEEDLE) else _next_run(runs, 0)
        while at >= 0:
            start = max(0, at - _BEFORE)
            yield start
            at = _next_run(runs, start + WINDOW - _BEFORE)
        return
    position = 0
    finder = Needles(rule.needles, lowered)
    while (hit := finder.search(position)) is not None:
        start = max(0, hit[0] - _BEFORE)
        yield start
        if start + WINDOW >= size:
            return
        position = max(hit[1], start + WINDOW - _BEFORE)


def _next_run(runs: bytes, position: int) -> int:
    """The start of the first maximal long run at or after ``position`` (``-1``: none)."""
    at = runs.find(_RUN_START, max(0, position - 1))
    return at + 1 if at >= 0 else -1


def _keyword_spans(text: str, lowered: str) -> Iterator[Span]:
    """detect-secrets' keyword detector (its quotes-required set) on each short line that
    holds one of its needles; the group of each expression that holds the value."""
    position = 0
    size = len(text)
    finder = Needles(_KEYWORD_NEEDLES, lowered)
    quotes = Needles(_QUOTES, text)
    while (hit := finder.search(position)) is not None:
        at = hit[0]
        quote = quotes.search(max(0, at - _KEYWORD_LINE))
        if quote is None:
            return  # no quote left, so no value the detector takes (netrc lines, issue 26)
        if quote[0] > at + _KEYWORD_LINE:
            position = quote[0] - _KEYWORD_LINE  # no quote near: on to the next one
            continue
        before = text.rfind("\n", max(0, at - _KEYWORD_LINE), at)
        after = text.find("\n", at, at + _KEYWORD_LINE)
        end = size if after < 0 and size - at <= _KEYWORD_LINE else after
        position = (at + _KEYWORD_LINE) if end < 0 else end + 1
        if end < 0 or (before < 0 and at > _KEYWORD_LINE):
            continue  # part of a long line: the label pass covers it
        line = text[before + 1 : end]
        if "'" not in line and '"' not in line and "`" not in line:
            continue
        for pattern, group in _keyword_groups().items():
            match = pattern.search(line)
            if match and match.group(group):
                a, b = match.span(group)
                yield before + 1 + a, before + 1 + b


@cache
def _keyword_groups() -> dict[re.Pattern[str], int]:
    """detect-secrets' keyword expressions, each with the group that holds the value."""
    from detect_secrets.plugins import keyword

    return dict(keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP)


def secret_group(match: re.Match[str]) -> Span:
    """The plugin's capture group when it holds the value, else the whole match.

    ``aws...'(KEY)'`` and ``://user:(PASS)@`` capture the value near the end;
    ``(ghp|gho)_...`` captures only the prefix, so the whole token is taken.
    """
    for index in range(1, (match.re.groups or 0) + 1):
        start, end = match.span(index)
        if start > match.start() and match.end() - end <= 2 and end > start:
            return start, end
    return match.span()
