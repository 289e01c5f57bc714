"""docs/deploy.md names real settings: every ``--flag`` it shows exists on the command it is shown with."""

from __future__ import annotations

import re
from pathlib import Path

import click

from toolpath.cli import cli

DEPLOY = Path(__file__).resolve().parents[1] / "docs" / "deploy.md"
COMMAND_LINE = re.compile(r"^\$ toolpath((?: [a-z][a-z-]*)+)")
"""A shell line of a code block that runs toolpath."""
COMMAND_NAMED = re.compile(r"`toolpath((?: [a-z][a-z-]*)+)")
"""A toolpath command named in backticks in prose."""
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def resolve(words: str) -> click.Command:
    """The deepest command of ``toolpath WORDS…`` (``db prune --older-than 30d`` → ``db prune``)."""
    command: click.Command = cli
    for word in words.split():
        if not isinstance(command, click.Group) or word not in command.commands:
            break
        command = command.commands[word]
    assert command is not cli, f"docs/deploy.md names no toolpath command in 'toolpath{words}'"
    return command


def flags_of(command: click.Command) -> set[str]:
    return {name for param in command.params for name in (*param.opts, *param.secondary_opts)} | {"--help"}


def blocks(text: str) -> list[tuple[bool, str]]:
    """The document as (is_code, text) blocks: fenced code blocks, and prose paragraphs and list items."""
    out: list[tuple[bool, str]] = []
    for i, part in enumerate(re.split(r"^```[a-z]*\n", text, flags=re.M)):
        if i % 2:
            out.append((True, part))
        else:
            out += [(False, p) for p in re.split(r"\n\s*\n|\n(?=- |\d+\. )", part) if p.strip()]
    return out


def shown_flags() -> list[tuple[str, click.Command | None, str]]:
    """(flag, the command it is shown with, where): in a code block, the command of its line (continuation lines
    included); in prose, a command the paragraph names, else the last command of the code block before it."""
    found: list[tuple[str, click.Command | None, str]] = []
    last_block_command: click.Command | None = None
    for is_code, text in blocks(DEPLOY.read_text(encoding="utf-8")):
        if is_code:
            for line in re.sub(r"\\\n", " ", text).splitlines():
                if match := COMMAND_LINE.search(line.strip()):
                    command = last_block_command = resolve(match.group(1))
                    found += [(flag, command, line.strip()) for flag in FLAG.findall(line.strip()[match.end() :])]
            continue
        named = [resolve(m.group(1)) for m in COMMAND_NAMED.finditer(text)]
        for flag in FLAG.findall(text):
            owner = next((c for c in named if flag in flags_of(c)), named[0] if named else last_block_command)
            found.append((flag, owner, text.strip()[:80]))
    return found


def test_every_flag_in_deploy_md_exists_on_its_command():
    found = shown_flags()
    assert len(found) > 20  # the check sees the document's flags
    missing = [
        (flag, command.name if command else None, where)
        for flag, command, where in found
        if command is None or flag not in flags_of(command)
    ]
    assert not missing


def test_the_check_catches_a_flag_that_does_not_exist(tmp_path, monkeypatch):
    monkeypatch.setattr(
        f"{__name__}.DEPLOY", tmp_path / "deploy.md", raising=True
    )  # the same check on a page with one wrong flag in each place a flag can be
    (tmp_path / "deploy.md").write_text(
        "```console\n$ toolpath collect --store x \\\n    --retain-spans 7d --retain-forever\n```\n\n"
        "- `--prune-every` and `--older-than`\n\n"
        "Run `toolpath db prune --older-than 1d --spans-only` or `--keep-all`.\n",
        encoding="utf-8",
    )
    bad = {(flag, c.name if c else None) for flag, c, _ in shown_flags() if c is None or flag not in flags_of(c)}
    assert bad == {("--retain-forever", "collect"), ("--older-than", "collect"), ("--keep-all", "prune")}
