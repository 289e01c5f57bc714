"""The catalogue redaction works from: the provider keys it knows by shape, the other patterns, the key names whose
values are secret, and the cheap tests that rule a pattern out before its regular expression runs.

Everything here is data and the little code that derives from it: :mod:`toolpath.redact` applies it. Every pattern
is linear-time (``tests/redaction`` checks their structure): each repetition is bounded, except one that ends the
pattern (it can only make a match longer, never fail it) and a possessive run that starts right after a character
it cannot hold (two starts never scan the same run). A pattern's cheap test is the set of literals one of which
every match holds, so a text without any of them is passed over without running the pattern.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = [
    "DEFAULT_KEYS",
    "DEFAULT_PATTERNS",
    "PROVIDER_TOKENS",
    "RULES",
    "Literals",
    "Token",
    "TokenPattern",
    "is_secret_key",
]


@dataclass(frozen=True)
class Token:
    """A provider's key or token, known by its shape: ``pattern`` (boundaries included) and the literals one of
    which every match holds."""

    provider: str
    pattern: str
    literals: tuple[str, ...]


def _token(provider: str, prefix: str, body: str, *, start: bool = False, literals: Iterable[str] = ()) -> Token:
    """A token made of a prefix (a regular expression that starts with a literal character; ``literals`` spells
    it out when it is not one literal) and a body. ``start``: only at a word start (``task-…`` holds ``sk-``), checked
    after the prefix's first character, so that the engine rules a position out with one comparison."""
    found = tuple(literals) or (prefix.replace("\\", ""),)
    first, rest = (prefix[:2], prefix[2:]) if prefix.startswith("\\") else (prefix[:1], prefix[1:])
    before = f"(?<![A-Za-z0-9]{first})" if start else ""
    return Token(provider, f"{first}{before}{rest}{body}", found)


PROVIDER_TOKENS: tuple[Token, ...] = (
    # prefixes no word ends in match glued to a preceding word too (``id42ghp_…``, ``idAKIA…``)
    _token("OpenAI, Anthropic, Langfuse (sk-…)", r"sk-", r"[A-Za-z0-9_-]{20,}", start=True),
    _token("Google API key", r"AIza", r"[0-9A-Za-z_-]{35}"),
    _token("Google OAuth client secret", r"GOCSPX-", r"[A-Za-z0-9_-]{24,}"),
    _token("Google OAuth access token", r"ya29\.", r"[0-9A-Za-z_-]{20,}", start=True),
    _token("Google OAuth refresh token", r"1//0", r"[0-9A-Za-z_-]{30,}", start=True),
    _token("GitHub", r"gh[pousr]_", r"[A-Za-z0-9]{36,}", literals=("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    _token("GitHub fine-grained", r"github_pat_", r"[A-Za-z0-9_]{22,}"),
    _token(
        "GitLab",
        r"gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-",
        r"[A-Za-z0-9_-]{20,}",
        literals=("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "glcbt-", "glimt-", "glptt-", "glagent-", "gloas-"),
    ),
    _token("GitLab runner registration", r"GR1348941", r"[A-Za-z0-9_-]{20,}"),
    _token("Slack", r"xox[abposr]-", r"[A-Za-z0-9-]{10,}", literals=("xox",)),
    _token("Slack app-level", r"xapp-", r"[0-9A-Za-z-]{20,}"),
    _token(
        "Slack webhook",
        r"hooks\.slack\.com/(?:services|workflows)/",
        r"[A-Za-z0-9_/]{20,}",
        literals=("hooks.slack.com/",),
    ),
    _token("Stripe", r"sk_(?:live|test)_", r"[A-Za-z0-9]{16,}", literals=("sk_live_", "sk_test_")),
    _token("Stripe restricted", r"rk_(?:live|test)_", r"[A-Za-z0-9]{16,}", literals=("rk_live_", "rk_test_")),
    _token("Stripe webhook secret", r"whsec_", r"[A-Za-z0-9]{24,}"),
    _token(
        "AWS access key id",
        r"A(?:KIA|SIA|BIA|CCA)",
        r"[0-9A-Z]{16}(?![0-9A-Z])",
        literals=("AKIA", "ASIA", "ABIA", "ACCA"),
    ),
    _token("Hugging Face", r"hf_", r"[A-Za-z0-9]{30,}", start=True),
    _token("npm", r"npm_", r"[A-Za-z0-9]{36,}", start=True),
    _token("PyPI", r"pypi-AgE", r"[A-Za-z0-9_-]{50,}"),
    _token("Docker Hub", r"dckr_pat_", r"[A-Za-z0-9_-]{20,}"),
    _token("Shopify", r"shp(?:at|ca|pa|ss)_", r"[a-fA-F0-9]{32,}", literals=("shpat_", "shpca_", "shppa_", "shpss_")),
    _token("Twilio API key", r"SK", r"[0-9a-f]{32}(?![A-Za-z0-9])", start=True),
    _token("SendGrid", r"SG\.", r"[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43,}"),
    # these four start with a class, not a literal: they cost a test at every position, run only where found
    _token("Mailchimp", r"(?<![A-Za-z0-9])", r"[0-9a-f]{32}-us[0-9]{1,2}(?![A-Za-z0-9])", literals=("-us",)),
    _token("Telegram bot", r"(?<![0-9:])[0-9]{8,10}:AA", r"[A-Za-z0-9_-]{33,}", literals=(":AA",)),
    _token("Discord webhook", r"/api/webhooks/", r"[0-9]{5,30}/[A-Za-z0-9_-]{20,}"),
    _token("DigitalOcean", r"do[opr]_v1_", r"[a-f0-9]{64}", literals=("_v1_",)),
    _token("Databricks", r"dapi", r"[a-f0-9]{32}", start=True),
    _token("Atlassian", r"ATATT3", r"[A-Za-z0-9_=-]{50,}"),
    _token("Postman", r"PMAK-", r"[a-f0-9]{24}-[a-f0-9]{34}"),
    _token("Pulumi", r"pul-", r"[a-f0-9]{40}", start=True),
    _token("New Relic", r"NRAK-", r"[A-Z0-9]{27}"),
    _token("Grafana service account", r"glsa_", r"[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
    _token("Grafana Cloud", r"glc_", r"[A-Za-z0-9+/]{32,}"),
    _token("HashiCorp Vault", r"hv[sb]\.", r"[A-Za-z0-9_-]{24,}", start=True, literals=("hvs.", "hvb.")),
    _token(
        "Terraform Cloud",
        r"(?<![A-Za-z0-9])[A-Za-z0-9]{14}\.atlasv1\.",
        r"[A-Za-z0-9_=-]{60,}",
        literals=(".atlasv1.",),
    ),
    _token("Sentry", r"sntry[su]_", r"[A-Za-z0-9+/=_]{40,}", literals=("sntrys_", "sntryu_")),
    _token("Square", r"sq0(?:atp|csp)-", r"[A-Za-z0-9_-]{22,}", literals=("sq0atp-", "sq0csp-")),
    _token("Linear", r"lin_api_", r"[A-Za-z0-9]{40,}"),
    _token("Notion", r"ntn_", r"[A-Za-z0-9]{40,}", start=True),
    _token("Notion legacy", r"secret_", r"[A-Za-z0-9]{40,}", start=True),
    _token("Figma", r"figd_", r"[A-Za-z0-9_-]{40,}"),
    _token("Supabase", r"sbp_", r"[a-f0-9]{40,}", start=True),
    _token("Groq", r"gsk_", r"[A-Za-z0-9]{48,}"),
    _token("xAI", r"xai-", r"[A-Za-z0-9]{60,}", start=True),
    _token("Replicate", r"r8_", r"[A-Za-z0-9]{37,}", start=True),
    _token("Perplexity", r"pplx-", r"[A-Za-z0-9]{40,}"),
    _token("LangSmith", r"lsv2_(?:pt|sk)_", r"[a-f0-9]{32}_[a-f0-9]{10}", literals=("lsv2_",)),
    _token("Pinecone", r"pcsk_", r"[A-Za-z0-9_]{40,}"),
    _token("Tavily", r"tvly-", r"[A-Za-z0-9_-]{20,}"),
    _token("Firecrawl", r"fc-", r"[a-f0-9]{32}(?![A-Za-z0-9])", start=True),
    _token("PlanetScale", r"pscale_(?:tkn|pw|oauth)_", r"[A-Za-z0-9_.-]{32,}", literals=("pscale_",)),
    _token("Render", r"rnd_", r"[A-Za-z0-9]{32,}", start=True),
    _token("Netlify", r"nfp_", r"[A-Za-z0-9]{36,}", start=True),
    _token("Heroku", r"HRKU-", r"[A-Za-z0-9_-]{20,}"),
    _token("age", r"AGE-SECRET-KEY-1", r"[0-9A-Z]{58}"),
    _token("Artifactory", r"AKCp", r"[A-Za-z0-9]{60,}", start=True),
    _token(
        "Azure AD client secret",
        r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}[0-9]Q~",
        r"[A-Za-z0-9_~.-]{31,34}",
        literals=("Q~",),
    ),
    _token("Firebase Cloud Messaging", r"AAAA[A-Za-z0-9_-]{7}:APA91b", r"[A-Za-z0-9_-]{100,}", literals=(":APA91b",)),
    _token("Dropbox", r"sl\.(?:u\.)?", r"[A-Za-z0-9_-]{130,}", start=True, literals=("sl.",)),
    _token("Mapbox secret", r"sk\.eyJ", r"[A-Za-z0-9_-]{20,}+\.[A-Za-z0-9_-]{20,}", literals=("sk.eyJ",)),
)
"""Provider keys by shape, from the providers' documentation of their formats (and detect-secrets' plugins)."""


@dataclass(frozen=True)
class Rule:
    """A default pattern: its name (a ``redact_patterns`` entry of that name replaces it), regular expression,
    and cheap test (the literals one of which every match holds, or a function)."""

    name: str
    pattern: str
    literals: tuple[str, ...] = ()
    folded: tuple[str, ...] = ()
    """Literals of a case-insensitive pattern, lowercase: looked for in the text case-folded."""
    test: Callable[[str], bool] | None = None
    """A cheap test of its own (card numbers: a run of digits where a word starts)."""


_MARKS = (
    "\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed\u0900-\u0dff"
    "\u0e31-\u0e4e\u0eb1-\u0ecd\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
)
"""Combining marks (accents, Indic and Thai vowel signs), which ``\\w`` leaves out (the Indic blocks whole)."""
_PEM_LABEL = r"[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
_DIGIT_RUN = re.compile(r"\d[\d ./_\t\u00a0\u202f\u2013-]{13}")
_ASCII_DIGIT_RUN = re.compile(r"[0-9][0-9 ./_\t-]{13}")  # the same on ASCII text, faster
_WORD_RUN = re.compile(r"[\w-]*")


def card_candidate(text: str) -> bool:
    r"""Whether a run of digits that may be a card number starts where a card number can (not inside a word: the
    card pattern's ``(?<![\w-])``). Ids made of digits (``s-0000000000000023``, ``call_17000000000001``) are passed
    over a word at a time."""
    digit_run = _ASCII_DIGIT_RUN if text.isascii() else _DIGIT_RUN  # \d is every script's digits
    pos = 0
    while (found := digit_run.search(text, pos)) is not None:
        start = found.start()
        before = text[start - 1] if start else " "
        if not (before.isalnum() or before == "_" or before == "-"):
            return True
        pos = _WORD_RUN.match(text, start).end()  # type: ignore[union-attr]  # a card starts past this word
    return False


_CARD_GAP = "(?: - |[ ./_\t\u00a0\u202f\u2013-])?"
"""What may stand between a card number's groups: nothing, a space, a dash, a dot, a slash, an underscore, a tab, a
no-break space, an en dash, or a dash between spaces."""

RULES: tuple[Rule, ...] = (
    Rule(
        "api_key",
        "(?:" + "|".join(t.pattern for t in PROVIDER_TOKENS) + ")",
        tuple(literal for t in PROVIDER_TOKENS for literal in t.literals),
    ),
    # the password of a URL's user info (postgresql://me:s3cret@db/x): the user name stays
    Rule("url_password", r"(?<=://)(?P<keep>[^\s:/@]{0,256}:)[^\s@/]{1,256}(?=@)", ("://",)),
    # starts only where a run of token characters starts: "sk-eyJ…" repeated would otherwise make every "eyJ" in one
    # long run a start that scans the whole run (quadratic)
    Rule("jwt", r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}+\.eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}", ("eyJ",)),
    Rule("bearer", r"\b[Bb](?i:earer)\s++[A-Za-z0-9._~+/=-]{8,}", folded=("earer",)),
    # a PEM block from BEGIN to END, or to the end of the text when it was cut: its header lines hold single dashes
    Rule(
        "private_key",
        rf"-----BEGIN{_PEM_LABEL}[^-]*+(?:-(?!----)[^-]*+){{0,16}}(?:-----END{_PEM_LABEL})?",
        ("-----BEGIN",),
    ),
    # any script (zoë.łukasiewicz@…, 佐藤@…, anna@bücher.de, राम@…: letters and their combining marks), with RFC
    # 5321's bounded parts: a bounded scan from every start keeps the search linear
    Rule(
        "email",
        rf"(?<![\w.%+{_MARKS}-])[\w.%+{_MARKS}-]{{1,64}}@(?:[\w{_MARKS}-]{{1,63}}\.){{1,8}}"
        rf"(?:(?:[^\W\d_]|[{_MARKS}]){{2,24}}|xn--[a-z0-9-]{{1,59}})(?![\w{_MARKS}-])",
        ("@",),
    ),
    # 16 digits as 4-4-4-4 or 15 as 4-6-5, each group apart by a space, a dash or nothing, not inside a longer word:
    # the digits of a UUID or a hex id never make a card number (and the Luhn check must pass)
    Rule(
        "card",
        rf"(?<![\w-])(?:\d{{4}}{_CARD_GAP}\d{{4}}{_CARD_GAP}\d{{4}}{_CARD_GAP}\d{{4}}"
        rf"|\d{{4}}{_CARD_GAP}\d{{6}}{_CARD_GAP}\d{{5}})(?![\w-])",
        test=card_candidate,
    ),
)

DEFAULT_PATTERNS: dict[str, str] = {rule.name: rule.pattern for rule in RULES}

DEFAULT_KEYS = frozenset(
    {"password", "passwd", "pwd", "passcode", "passphrase", "secret", "client_secret", "api_key", "apikey",
     "x-api-key", "access_token", "refresh_token", "token", "authorization", "proxy-authorization", "auth",
     "cookie", "set-cookie", "private_key", "credentials", "signature", "sig"}
)  # fmt: skip
"""Key names whose values are secret, exactly (any case); :func:`is_secret_key` finds more by what they hold."""

SECRET_KEY_PARTS = ("password", "passwd", "passcode", "passphrase", "pwd", "secret", "api_key", "apikey",
                    "private_key", "privatekey", "credential", "authorization", "cookie", "signature", "access_key",
                    "accesskey", "account_key", "accountkey", "auth_key", "authkey", "contraseña", "contrasena",
                    "token")  # fmt: skip
"""A key holding one of these (case-insensitive, ``-`` read as ``_``) is secret: ``db_password``, ``X-Auth-Token``,
``client_secret``, ``aws_secret_access_key``… Token *counts* (``max_tokens``, ``input_tokens``, ``token_count``) and
tokenizers are not."""
SECRET_KEY_WORDS = frozenset({"auth", "sig"})
"""A key whose last word is one of these is secret: ``auth``, ``X-Auth``, ``basicAuth``, ``sig`` (not
``author`` nor ``oauth_provider``)."""
_NOT_A_SECRET_TOKEN = re.compile(r"tokens|tokeniz|token_?(?:count|limit|type|usage|budget)|num_?token")
_WORDS = re.compile(r"[^0-9A-Za-z]+|(?<=[a-z0-9])(?=[A-Z])")


@functools.lru_cache(maxsize=8192)
def is_secret_key(key: str) -> bool:
    """Whether a key (an object key, an attribute name's last part, a ``key=`` in text) names a secret."""
    low = key.casefold().replace("-", "_")
    held = [part for part in SECRET_KEY_PARTS if part in low]
    if held:
        return held != ["token"] or _NOT_A_SECRET_TOKEN.search(low) is None
    words = [w for w in _WORDS.split(key) if w]
    return bool(words) and words[-1].casefold() in SECRET_KEY_WORDS


@functools.lru_cache(maxsize=32)
def key_literals(keys: frozenset[str]) -> Literals:
    """What a text naming a secret key holds, case-folded: the parts, the last words and ``keys`` themselves, each
    also with ``-`` for ``_`` (a text is not normalised); none that holds another."""
    every = {*keys, *SECRET_KEY_PARTS, *SECRET_KEY_WORDS}
    every |= {k.replace("_", "-") for k in every}
    return Literals((k for k in every if not any(o != k and o in k for o in every)), folded=True)


_RARE_FIRST = "_-.~:/@=+QZXJKVBPYGWFMUCLDRHSNIOATEqzjxkvbpygwfmucldrhsnioate"


class Literals:
    """Whether a text holds any of a set of literals, in one search, faster than one ``in`` test each: each literal
    is found by its least common character, the rest checked around it (``_(?<=ghp_)``), so most positions of a
    text cost one look at one character. ``folded``: the literals are lowercase and looked for in the text
    case-folded."""

    def __init__(self, literals: Iterable[str], *, folded: bool = False) -> None:
        self.literals = tuple(sorted(set(literals)))
        self.folded = folded
        groups: dict[str, list[str]] = defaultdict(list)
        for literal in self.literals:
            groups[min(literal, key=lambda c: _RARE_FIRST.find(c) % (len(_RARE_FIRST) + 1))].append(literal)
        self._groups = dict(groups)
        """Literals by the character they are found by."""
        self._searches: dict[frozenset[str], Callable[[str, int], re.Match[str] | None]] = {}
        self._search = self._searching(frozenset(self._groups))
        # non-ASCII text: (?i) matches more than lowercase does ("ſ" is an "s"), and so does case-folding
        self._unicode = re.compile("|".join(map(re.escape, self.literals)) or "(?!)", re.I).search

    def _searching(self, chars: frozenset[str]) -> Callable[[str, int], re.Match[str] | None]:
        """The search for the literals found by ``chars`` (no capturing group: the engine would no longer skip
        the positions no alternative starts at; the character matched tells the group)."""
        found = self._searches.get(chars)
        if found is None:
            alternatives = []
            for char in sorted(chars):
                around = []
                for literal in self._groups[char]:
                    at = literal.index(char)
                    before, after = re.escape(literal[: at + 1]), re.escape(literal[at + 1 :])
                    around.append(f"(?<={before})" + (f"(?={after})" if after else ""))
                alternatives.append(f"{re.escape(char)}(?:{'|'.join(around)})")
            found = re.compile("|".join(alternatives) or "(?!)").search
            if len(self._searches) < 256:
                self._searches[chars] = found
        return found

    def found_in(self, text: str, low: str | None = None) -> bool:
        """Whether ``text`` holds one of the literals (``low``: ``text`` lowercased, when the caller has it)."""
        if self.folded:
            if text.isascii():
                text = text.lower() if low is None else low
            elif self._unicode(text) is not None:
                return True
            else:
                text = text.casefold()  # as is_secret_key reads a key ("paſſword" is a password)
        return self._search(text, 0) is not None

    def present(self, text: str) -> frozenset[str]:
        """Which of the (exact) literals ``text`` holds: a search finds a group's character where one of its
        literals is, ``in`` tests tell which of that group's literals the text holds, and the search goes on for
        the other groups, at most once per group."""
        left = frozenset(self._groups)
        search = self._search
        found: set[str] = set()
        pos = 0
        while left and (match := search(text, pos)) is not None:
            char = text[match.start()]
            found.update(literal for literal in self._groups[char] if literal in text)
            left -= {char}
            search = self._searching(left)
            pos = match.start()
        return frozenset(found)


class TokenPattern:
    """The provider tokens' pattern as a regular expression, narrowed for each text to the tokens whose literals
    the text holds: an alternation of sixty costs a test of each at every position, the one or two a text may hold
    cost little. Same matches as the whole pattern (a token never matches without its literal)."""

    def __init__(self, tokens: tuple[Token, ...]) -> None:
        self.pattern = "(?:" + "|".join(t.pattern for t in tokens) + ")"
        self._tokens = tokens
        self._literals = Literals(literal for t in tokens for literal in t.literals)
        self._by_literal: dict[str, list[int]] = defaultdict(list)
        for index, token in enumerate(tokens):
            for literal in token.literals:
                self._by_literal[literal].append(index)
        self._compiled: dict[frozenset[int], re.Pattern[str]] = {}
        self._last: tuple[str, re.Pattern[str] | None] = ("", None)

    def narrowed(self, text: str) -> re.Pattern[str] | None:
        """The pattern of the tokens ``text`` may hold (``None``: none)."""
        last_text, last = self._last
        if text is last_text:
            return last
        indices = frozenset(i for literal in self._literals.present(text) for i in self._by_literal[literal])
        compiled = self._compiled.get(indices) if indices else None
        if indices and compiled is None:
            compiled = re.compile("(?:" + "|".join(self._tokens[i].pattern for i in sorted(indices)) + ")")
            if len(self._compiled) < 256:
                self._compiled[indices] = compiled
        self._last = (text, compiled)
        return compiled

    def search(self, text: str) -> re.Match[str] | None:
        compiled = self.narrowed(text)
        return None if compiled is None else compiled.search(text)

    def sub(self, replace: Callable[[re.Match[str]], str], text: str) -> str:
        compiled = self.narrowed(text)
        return text if compiled is None else compiled.sub(replace, text)
