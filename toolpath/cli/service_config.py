"""A service command's settings from where services keep them: the command line, ``TOOLPATH_*`` environment
variables and a TOML file (``--config``), in that order of precedence, over the defaults; and its logs as
one JSON object per line on request (``--log-format json``).

Every option ``--some-name`` is also ``some_name`` in the file and ``TOOLPATH_SOME_NAME`` in the environment
(a repeatable option takes a list in the file and space-separated values in the variable).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import sys
import tomllib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from toolpath.cli import json_as_ascii
from toolpath.config import ENV_PREFIX
from toolpath.errors import ConfigError

LOG_FORMATS = ("text", "json")
_F = TypeVar("_F", bound=Callable[..., Any])


def key_of(param: click.Parameter) -> str:
    """``--max-in-flight`` -> ``max_in_flight``: the option's name in the file (and, upper-cased, in the
    environment)."""
    longest = max(param.opts, key=len)
    return longest.lstrip("-").replace("-", "_")


def service_settings(command: click.Command) -> click.Command:
    """Give every option of ``command`` its ``TOOLPATH_*`` variable and add ``--config FILE``."""
    for param in command.params:
        if isinstance(param, click.Option):
            param.envvar = param.envvar or f"{ENV_PREFIX}{key_of(param).upper()}"
            param.show_envvar = True
            param.__class__ = _ServiceOption
    config = click.Option(
        ["--config"],
        type=click.Path(path_type=Path),
        envvar=f"{ENV_PREFIX}CONFIG",
        show_envvar=True,
        is_eager=True,
        expose_value=False,
        callback=_load_file,
        help="TOML file of these options (keys as the option names, with '_'); the command line and "
        "TOOLPATH_* variables win over it.",
    )
    command.params.insert(0, config)
    return command


class _ServiceOption(click.Option):
    """An option whose error names its environment variable only when the value came from there."""

    def get_error_hint(self, ctx: click.Context | None) -> str:
        hint = " / ".join(f"'{opt}'" for opt in self.opts)
        source = ctx.get_parameter_source(self.name) if ctx is not None and self.name else None
        if source is ParameterSource.ENVIRONMENT and isinstance(self.envvar, str):
            hint += f" (from ${self.envvar})"
        return hint


def _load_file(ctx: click.Context, param: click.Parameter, path: Path | None) -> None:
    if path is None:
        return
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a folder, not a TOML file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    params = {key_of(p): p for p in ctx.command.params if isinstance(p, click.Option) and p is not param}
    defaults: dict[str, Any] = {}
    for key, value in data.items():
        option = params.get(key.replace("-", "_"))
        if option is None or option.name is None:
            raise ConfigError(f"{path}: unknown key {key!r} (known: {', '.join(sorted(params))})")
        if isinstance(value, dict):
            raise ConfigError(f"{path}: {key}: a table is not a value of --{key.replace('_', '-')}")
        if option.multiple and isinstance(value, str):
            value = [value]
        if isinstance(option.type, click.Path) and not all(
            isinstance(v, str) for v in (value if option.multiple and isinstance(value, list) else [value])
        ):  # click would take a number for a file descriptor
            raise ConfigError(f"{path}: {key}: expected a path (a string), got {value!r}")
        if isinstance(option.type, click.Path) and isinstance(value, str) and not Path(value).is_absolute():
            value = str(path.parent / value)  # a file named in the file is found next to it
        if option.is_flag and not isinstance(value, bool):  # "no" is a true string: never a guess
            raise ConfigError(f"{path}: {key}: expected true or false, got {value!r}")
        try:
            converted = option.type_cast_value(ctx, value)
            if option.callback is not None:
                option.callback(ctx, option, converted)
        except click.BadParameter as exc:
            raise ConfigError(f"{path}: {key}: {exc.message}") from None
        defaults[option.name] = value
    ctx.default_map = {**(ctx.default_map or {}), **defaults}


def log_format_option(fn: _F) -> _F:
    return click.option(
        "--log-format",
        type=click.Choice(LOG_FORMATS),
        default="text",
        show_default=True,
        help="json: one JSON object per line on stderr (time, level, logger, message, fields), access log included.",
    )(fn)


# --- JSON logs -----------------------------------------------------------------------------------------------

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime", "taskName"}
_ACCESS_FIELDS = ("client", "method", "path", "http_version", "status")


_CREDENTIAL_PARAM = re.compile(r"(?i)([?&](?:token|access_token|api_key|apikey|key|password|secret)=)[^&#\s]*")


def scrub_credentials(path: str) -> str:
    """``path`` with the value of every credential query parameter (``?token=…``: the UI's login link) replaced:
    no log line carries a credential."""
    return _CREDENTIAL_PARAM.sub(r"\1[REDACTED]", path)


class JsonFormatter(logging.Formatter):
    """``{"time", "level", "logger", "message", …fields}``: the fields are a record's ``extra`` values, uvicorn's
    access-log arguments by name, and the exception's traceback as ``exception``."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.name == "uvicorn.access" and isinstance(record.args, tuple) and len(record.args) == 5:
            args = (*record.args[:2], scrub_credentials(str(record.args[2])), *record.args[3:])
            entry["message"] = record.msg % args if isinstance(record.msg, str) else entry["message"]
            entry.update(zip(_ACCESS_FIELDS, args, strict=True))
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_") and key not in entry:
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=json_as_ascii(sys.stderr))


@contextlib.contextmanager
def service_logging(log_format: str) -> Iterator[logging.Logger | None]:
    """With ``json``: a JSON handler on the root logger at INFO while the block runs (uvicorn's loggers
    propagate to it), and the logger the command writes its own lines to; ``None`` with ``text`` (the command
    prints as usual)."""
    if log_format != "json":
        yield None
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield logging.getLogger("toolpath.service")
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
