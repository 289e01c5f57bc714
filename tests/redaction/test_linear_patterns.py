"""Every regular expression redaction runs is linear-time by its structure, checked on the parsed pattern rather
than timed (the times are in ``benchmarks/bench_redact.py``).

A search costs the sum, over the positions it starts at, of how far each start scans. That sum is linear when
every start scans a bounded stretch, except for two kinds of repetition without a bound:

- **at the pattern's end**: nothing after it can fail, so it only makes a match that already holds longer, and the
  search goes on after the match;
- **possessive, right after a character it cannot hold** (``password\\s*+=``, ``-----[^-]*+``): the run it scans
  starts where a run of its characters starts, so two starts never scan the same run (and possessive, it never
  scans it twice).

Anything else unbounded (``\\s*x``, ``(a+)+``, ``(?=.*x)``) fails here.
"""

from __future__ import annotations

import re
import re._constants as c
import re._parser as parser
from collections.abc import Iterator
from functools import cache

import pytest

from toolpath import redact_catalogue, redact_text
from toolpath.redact_catalogue import DEFAULT_PATTERNS, PROVIDER_TOKENS, Literals, key_literals

Ranges = tuple[tuple[int, int], ...]
"""A set of characters: sorted, disjoint, inclusive ranges of code points."""
EVERY: Ranges = ((0, 0x10FFFF),)
REPEATS = (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT)
EMPTY_WIDTH = (c.ASSERT, c.ASSERT_NOT, c.AT)


def union(*sets: Ranges) -> Ranges:
    merged: list[list[int]] = []
    for lo, hi in sorted(r for s in sets for r in s):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return tuple((lo, hi) for lo, hi in merged)


def complement(s: Ranges) -> Ranges:
    out, start = [], 0
    for lo, hi in s:
        if lo > start:
            out.append((start, lo - 1))
        start = hi + 1
    if start <= 0x10FFFF:
        out.append((start, 0x10FFFF))
    return tuple(out)


def intersects(a: Ranges, b: Ranges) -> bool:
    return any(lo <= bhi and blo <= hi for lo, hi in a for blo, bhi in b)


@cache
def category(name: str) -> Ranges:
    """The code points ``\\d``, ``\\s`` or ``\\w`` (Unicode) match, found by the engine itself."""
    every = "".join(map(chr, range(0x110000)))
    return tuple((m.start(), m.end() - 1) for m in re.finditer(f"\\{name}+", every))


CATEGORIES = {c.CATEGORY_DIGIT: "d", c.CATEGORY_SPACE: "s", c.CATEGORY_WORD: "w"}
NOT_CATEGORIES = {c.CATEGORY_NOT_DIGIT: "d", c.CATEGORY_NOT_SPACE: "s", c.CATEGORY_NOT_WORD: "w"}


def folded(s: Ranges) -> Ranges:
    """``s`` with every case variant of its characters (what ``(?i)`` also matches); only small sets."""
    chars = [chr(x) for lo, hi in s for x in range(lo, hi + 1)]
    assert len(chars) < 5000, "a large set under IGNORECASE: not checked"
    variants = {ord(v) for ch in chars for v in (ch, ch.lower(), ch.upper(), ch.casefold()) if len(v) == 1}
    return union(*(((v, v),) for v in variants))


def chars_of(op: object, av: object, flags: int) -> Ranges:
    """The characters a one-character item matches."""
    if op is c.LITERAL:
        found: Ranges = ((av, av),)  # type: ignore[assignment]
    elif op is c.NOT_LITERAL:
        found = complement(((av, av),))  # type: ignore[arg-type]
    elif op is c.ANY:
        return EVERY if flags & re.DOTALL else complement(((10, 10),))
    elif op is c.IN:
        items = list(av)  # type: ignore[call-overload]
        negate = bool(items) and items[0][0] is c.NEGATE
        parts = []
        for item_op, item_av in items[1:] if negate else items:
            if item_op is c.CATEGORY:
                name = CATEGORIES.get(item_av) or NOT_CATEGORIES[item_av]
                parts.append(category(name) if item_av in CATEGORIES else complement(category(name)))
            else:
                parts.append(chars_of(item_op, item_av, 0))
        found = complement(union(*parts)) if negate else union(*parts)
    elif op is c.RANGE:
        return (av,)  # type: ignore[return-value]
    else:
        raise AssertionError(f"not a one-character item: {op}")
    return folded(found) if flags & re.IGNORECASE else found


class Checker:
    """The problems of one pattern: each unbounded repetition neither at the end nor guarded."""

    def __init__(self, pattern: str) -> None:
        self.tree = parser.parse(pattern)
        self.flags = self.tree.state.flags
        self.groups: dict[int, parser.SubPattern] = {}
        self.problems: list[str] = []

    def run(self) -> list[str]:
        self.sequence(self.tree, tail=True, before=((), True), flags=self.flags)
        return self.problems

    def last(self, items: list[tuple[object, object]], flags: int) -> tuple[Ranges, bool]:
        """The characters the last consumed character of ``items`` may be, and whether they may consume none."""
        found: Ranges = ()
        for op, av in reversed(items):
            chars, empty = self.last_of(op, av, flags)
            found = union(found, chars)
            if not empty:
                return found, False
        return found, True

    def last_of(self, op: object, av: object, flags: int) -> tuple[Ranges, bool]:
        if op in EMPTY_WIDTH:
            return (), True
        if op is c.SUBPATTERN:
            _, add, remove, sub = av  # type: ignore[misc]
            return self.last(sub.data, (flags | add) & ~remove)
        if op is c.ATOMIC_GROUP:
            return self.last(av.data, flags)  # type: ignore[attr-defined]
        if op is c.BRANCH:
            found = [self.last(alt.data, flags) for alt in av[1]]  # type: ignore[index]
            return union(*(f[0] for f in found)), any(f[1] for f in found)
        if op in REPEATS:
            low, _, sub = av  # type: ignore[misc]
            chars, empty = self.last(sub.data, flags)
            return chars, empty or low == 0
        if op is c.GROUPREF:
            return self.last(self.groups[av].data, flags)  # type: ignore[index]
        if op is c.GROUPREF_EXISTS:
            _, yes, no = av  # type: ignore[misc]
            found = [self.last(branch.data, flags) for branch in (yes, no) if branch is not None]
            return union(*(f[0] for f in found)), no is None or any(f[1] for f in found)
        return chars_of(op, av, flags), False

    def sequence(self, sub: parser.SubPattern, *, tail: bool, before: tuple[Ranges, bool], flags: int) -> None:
        items = list(sub.data)
        for i, (op, av) in enumerate(items):
            at_end = tail and i == len(items) - 1
            chars, empty = self.last(items[:i], flags)
            prefix = (union(chars, before[0]), before[1]) if empty else (chars, False)
            if op is c.SUBPATTERN:
                group, add, remove, inner = av
                if group is not None:
                    self.groups[group] = inner
                self.sequence(inner, tail=at_end, before=prefix, flags=(flags | add) & ~remove)
            elif op is c.ATOMIC_GROUP:
                self.sequence(av, tail=at_end, before=prefix, flags=flags)
            elif op is c.BRANCH:
                for alternative in av[1]:
                    self.sequence(alternative, tail=at_end, before=prefix, flags=flags)
            elif op in (c.ASSERT, c.ASSERT_NOT):
                if av[1].getwidth()[1] >= c.MAXREPEAT:
                    self.problems.append(f"a lookaround without a bound at item {i}")
                self.sequence(av[1], tail=False, before=((), True), flags=flags)
            elif op is c.GROUPREF_EXISTS:
                for branch in av[1:]:
                    if branch is not None:
                        self.sequence(branch, tail=at_end, before=prefix, flags=flags)
            elif op in REPEATS:
                _, high, body = av
                if high < c.MAXREPEAT:
                    self.sequence(body, tail=False, before=prefix, flags=flags)
                elif body.getwidth()[1] >= c.MAXREPEAT:
                    self.problems.append(f"an unbounded repetition inside an unbounded one at item {i}")
                elif not at_end and not self.guarded(op, body, items[:i], before, flags):
                    self.problems.append(f"an unbounded repetition at item {i}, neither at the end nor guarded")

    def guarded(self, op: object, body: parser.SubPattern, prefix: list[tuple[object, object]],
                before: tuple[Ranges, bool], flags: int) -> bool:  # fmt: skip
        """Possessive, of one character class C, and the run of C it scans starts where a run of C starts: walking
        back from it over characters of C, the first thing met is a character not in C, or a lookbehind that
        refuses C (``(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}+``)."""
        if op is not c.POSSESSIVE_REPEAT or len(body.data) != 1:
            return False
        ((item_op, item_av),) = body.data
        if item_op not in (c.LITERAL, c.NOT_LITERAL, c.IN, c.ANY):
            return False
        run = chars_of(item_op, item_av, flags)
        for op_before, av_before in reversed(prefix):
            if op_before is c.ASSERT_NOT and av_before[0] == -1:
                refused = av_before[1].data
                # True: the lookbehind refuses every character of the run
                return (
                    len(refused) == 1
                    and refused[0][0] in (c.LITERAL, c.IN)
                    and not intersects(run, complement(chars_of(*refused[0], flags)))
                )
            if op_before in EMPTY_WIDTH:
                continue
            chars = self.every_char(op_before, av_before, flags)
            if chars is None:
                return False
            if not intersects(chars, complement(run)):
                continue  # part of the run
            if intersects(chars, run):
                return False
            if parser.SubPattern(self.tree.state, [(op_before, av_before)]).getwidth()[0] > 0:
                return True
            # it may consume nothing: what comes before it must guard the run then
        return not before[1] and not intersects(before[0], run)

    def every_char(self, op: object, av: object, flags: int) -> Ranges | None:
        """Every character an item may consume (``None``: not worked out for this kind of item)."""
        if op in (c.LITERAL, c.NOT_LITERAL, c.IN, c.ANY):
            return chars_of(op, av, flags)
        if op is c.SUBPATTERN:
            found = [self.every_char(o, a, (flags | av[1]) & ~av[2]) for o, a in av[3].data]  # type: ignore[index]
        elif op is c.BRANCH:
            found = [self.every_char(o, a, flags) for alt in av[1] for o, a in alt.data]  # type: ignore[index]
        elif op in REPEATS:
            found = [self.every_char(o, a, flags) for o, a in av[2].data]  # type: ignore[index]
        elif op is c.GROUPREF:
            found = [self.every_char(o, a, flags) for o, a in self.groups[av].data]  # type: ignore[index]
        else:
            return None
        return None if any(f is None for f in found) else union(*found)  # type: ignore[arg-type]


def problems(pattern: str) -> list[str]:
    return Checker(pattern).run()


def every_pattern() -> Iterator[tuple[str, str]]:
    yield from DEFAULT_PATTERNS.items()
    for token in PROVIDER_TOKENS:
        yield f"token {token.provider}", token.pattern
    for name in ("ASSIGNMENT", "QUOTE", "BARE", "LINE", "_ESCAPE", "_HEADER"):
        yield f"redact_text.{name}", getattr(redact_text, name).pattern
    for name in ("_DIGIT_RUN", "_ASCII_DIGIT_RUN", "_WORD_RUN", "_NOT_A_SECRET_TOKEN", "_WORDS"):
        yield f"redact_catalogue.{name}", getattr(redact_catalogue, name).pattern
    literals = Literals(literal for token in PROVIDER_TOKENS for literal in token.literals)
    yield "provider literals", literals._search.__self__.pattern  # type: ignore[attr-defined]
    yield "key literals", key_literals(frozenset())._search.__self__.pattern  # type: ignore[attr-defined]


@pytest.mark.parametrize(("name", "pattern"), list(every_pattern()), ids=[n for n, _ in every_pattern()])
def test_every_pattern_redaction_runs_is_linear_by_its_structure(name: str, pattern: str) -> None:
    assert problems(pattern) == [], name


@pytest.mark.parametrize(
    "pattern",
    [r"\s*x", r"(a+)+", r"a.*b", r"(?=.*x)y", r"\s*+x", r"a[ab]*+c", r"(?:a|b)[ab]*+c", r"x\s*=\s*y",
     r"a(?:b|)[ab]*+c", r"(?<!a)b[ab]*+c", r"(?:-[^-]*){0,3}x"],
)  # fmt: skip
def test_the_checker_finds_patterns_that_are_not_linear(pattern: str) -> None:
    assert problems(pattern), pattern


@pytest.mark.parametrize(
    "pattern",
    [r"sk-[a-z]{20,}", r"x{1,10}y", r"a\s*+=\s*+b", r"-----[^-]*+(?:-(?!----)[^-]*+){0,16}", r"(?:ab|cd)[ \t]*+:",
     r"(?P<q>['\"]|)\w{1,9}+(?P=q)[ \t]*+=", r"[a-z]{1,3}(?:x|y[0-9]+)", r"(?<![a-z])ab[a-z]{2,}+\.x"],
)  # fmt: skip
def test_the_checker_passes_linear_patterns(pattern: str) -> None:
    assert problems(pattern) == [], pattern
