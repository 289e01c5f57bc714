"""``toolpath ui``: a local web app over a store — sessions and their trajectories, eval sets made from recorded
traffic, evaluation runs started and compared, online pass rates. Starlette and Jinja2 (the ``ui`` extra); every
asset ships in the package."""

from __future__ import annotations

from toolpath.ui.app import create_app

__all__ = ["create_app"]
