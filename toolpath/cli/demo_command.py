"""``toolpath demo``: the bundled smart-home demo, end to end."""

from __future__ import annotations

import click

from toolpath.cli.options import store_option
from toolpath.cli.output import console


@click.command()
@store_option
@click.option(
    "--worst", default=6, show_default=True, type=click.IntRange(min=0), help="How many of the worst cases to show."
)
def demo(store: str | None, worst: int) -> None:
    """Run the bundled smart-home agent over 24 cases and score its trajectories.

    No network and no API key: the agent is rule-based. Everything it does is traced into the store
    (sqlite:///toolpath.db by default), then scored.

        toolpath demo
        toolpath sessions list
    """
    from toolpath.demo import run_demo

    run_demo(store, console, worst)
