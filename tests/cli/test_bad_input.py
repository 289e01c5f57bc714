"""Every command, given broken or unusual input as a new user would give it.

Bad input gets one ``error:`` line naming the file, line, field or option, exit 2, no traceback, and leaves no
file behind; input users reasonably give is accepted. Each case runs in a fresh working directory (with a copy of
the demo's store where the command needs recorded data) and lists the files it may create.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import socket
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import toolpath
from tests.helpers.cli import run_cli

CALL = {"tool_name": "get_weather", "tool_input": {"city": "Paris"}}
ROWS = [
    {"prompt": "weather in Paris?", "predicted_trajectory": [CALL], "reference_trajectory": [CALL]},
    {"prompt": "hello", "predicted_trajectory": [], "reference_trajectory": []},
]
JSONL = "".join(json.dumps(row) + "\n" for row in ROWS)
AGENTS = """
import toolpath

NOT_AN_AGENT = 42

@toolpath.agent(name="smart_home_assistant")
def v1(prompt: str) -> str:
    return "Done."
"""
NO_CREDENTIALS = {"GOOGLE_API_KEY": "", "GEMINI_API_KEY": "", "GOOGLE_GENAI_USE_VERTEXAI": ""}
NOT_A_DATABASE = "these are my notes, not a database\n" * 50
NEITHER = "is neither a database URL nor a SQLite file path (e.g. sqlite:///toolpath.db"
CANNOT_OPEN = "error: store sqlite:///notes.db: cannot open (file is not a database)"
NEWER = "UPDATE alembic_version SET version_num = '0099'"
MADE_BY_NEWER = ("error: store sqlite:///toolpath.db was made or upgraded by a newer toolpath: its schema is at revision "
                 "'0099', which this toolpath does not know (its newest is ")  # fmt: skip
DEEP = "[" * 100_000 + "]" * 100_000
READ_ONLY = "error: store sqlite:///toolpath.db?mode=ro is read-only (mode=ro): "


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]
    code: int
    first: str
    """The start of the first line: of stderr (the error) when the exit code is 2, else of stdout."""
    files: dict[str, str] = field(default_factory=dict)
    """Files to write first (a name ending in / is a folder)."""
    store: bool = False
    """Copy the demo's store in as toolpath.db (the default store)."""
    sql: str = ""
    """A statement run on that copy first (a store as another program or a newer toolpath left it)."""
    creates: tuple[str, ...] = ()
    """Files the command may create."""
    contains: str = ""
    """Text the output must hold as well."""
    env: dict[str, str] = field(default_factory=dict)
    """Environment variables beside no credentials (a key: the judge is made, what follows it is checked)."""


def case(id: str, *args: str, code: int = 2, first: str, **options: object) -> Case:
    return Case(id, args, code, first, **options)  # type: ignore[arg-type]


CASES = [
    # --- eval ---------------------------------------------------------------------------------------------
    case("eval-store-colons", "eval", "cases.jsonl", "--metrics", "trajectory_exact_match", "--store", "::::",
         first=f"error: store '::::' {NEITHER}", files={"cases.jsonl": JSONL}),
    case("eval-store-host-port", "eval", "cases.jsonl", "--metrics", "trajectory_exact_match", "--store",
         "localhost:5432", first=f"error: store 'localhost:5432' {NEITHER}", files={"cases.jsonl": JSONL}),
    case("eval-store-libpq", "eval", "cases.jsonl", "--metrics", "trajectory_exact_match", "--store",
         "host=db1 dbname=toolpath user=me", first="error: store 'host=db1 dbname=toolpath user=me' is neither",
         files={"cases.jsonl": JSONL}),
    case("eval-csv-broken-cell", "eval", "cases.csv", "--metrics", "trajectory_exact_match",
         first="error: cases.csv:3: predicted_trajectory: not valid JSON (Expecting ',' delimiter",
         files={"cases.csv": 'prompt,predicted_trajectory,reference_trajectory\na,[],[]\n'
                             'b,"[{""tool_name"": ""x""}",[]\nc,[],[]\n'}),
    case("eval-csv-semicolons", "eval", "semi.csv", "--metrics", "trajectory_exact_match", "--quiet", code=0,
         first="semi.csv (2 rows): trajectory_exact_match 1.000 (2/2)",
         files={"semi.csv": 'prompt;predicted_trajectory;reference_trajectory\na;[];[]\n'
                            '"b;c";"[{""tool_name"": ""x""}]";"[{""tool_name"": ""x""}]"\n'}),
    case("eval-csv-tabs", "eval", "tabs.csv", "--metrics", "trajectory_exact_match", "--quiet", code=0,
         first="tabs.csv (1 rows): trajectory_exact_match 1.000 (1/1)",
         files={"tabs.csv": "prompt\tpredicted_trajectory\treference_trajectory\na\t[]\t[]\n"}),
    case("eval-threshold-overflows-to-infinity", "eval", "cases.jsonl", "--metrics", "trajectory_exact_match",
         "--threshold", "trajectory_exact_match=-1e309", files={"cases.jsonl": JSONL},
         first="error: --threshold 'trajectory_exact_match=-1e309': expected a finite number, got -inf"),
    case("eval-threshold-nan", "eval", "cases.jsonl", "--metrics", "trajectory_exact_match",
         "--threshold", "trajectory_exact_match=nan", files={"cases.jsonl": JSONL},
         first="error: --threshold 'trajectory_exact_match=nan': expected a finite number, got nan"),
    case("eval-trajectory-plain-string", "eval", "plain.jsonl", "--metrics", "trajectory_exact_match",
         first="error: plain.jsonl:2: predicted_trajectory: not valid JSON (Expecting value at char 0); expected a "
               "list of tool calls",
         files={"plain.jsonl": JSONL.splitlines()[0] + "\n" + json.dumps(
             {"predicted_trajectory": "get_weather", "reference_trajectory": [CALL]}) + "\n"}),
    case("eval-call-without-tool-name", "eval", "noname.jsonl", "--metrics", "trajectory_exact_match",
         first="error: noname.jsonl:1: reference_trajectory[0]: has neither 'tool_name' nor 'name'",
         files={"noname.jsonl": json.dumps({"predicted_trajectory": [], "reference_trajectory": [{"tool": "x"}]})}),
    case("eval-empty-dataset", "eval", "empty.jsonl", "--metrics", "trajectory_exact_match",
         first="error: empty.jsonl: no rows", files={"empty.jsonl": "\n"}),
    case("eval-header-only-csv", "eval", "empty.csv", "--metrics", "trajectory_exact_match",
         first="error: empty.csv: no rows", files={"empty.csv": "prompt,reference_trajectory\n"}),
    case("eval-output-is-a-folder", "eval", "cases.jsonl", "--metrics", "trajectory_exact_match", "--output", "out",
         first="error: --output out: is a folder; give a file name", files={"cases.jsonl": JSONL, "out/": ""}),
    case("eval-output-in-missing-folder", "eval", "cases.jsonl", "--metrics", "trajectory_exact_match",
         "--output", "missing/results.json", first="error: --output missing/results.json: folder missing does not",
         files={"cases.jsonl": JSONL}),
    case("eval-same-metric-twice", "eval", "cases.jsonl", "--metrics", "trajectory_f1(match=name),trajectory_f1",
         first="error: metric(s) listed twice: trajectory_f1 (give each variant a name of its own",
         files={"cases.jsonl": JSONL}),
    case("eval-agent-toolpath-cannot-run", "eval", "cases.jsonl", "--metrics", "trajectory_exact_match", "--agent",
         "agents:NOT_AN_AGENT", first="error: --agent 'agents:NOT_AN_AGENT': cannot run an int as an agent",
         files={"cases.jsonl": JSONL, "agents.py": AGENTS}),
    case("eval-judge-without-credentials", "eval", "cases.jsonl", "--metrics", "exact_match,fluency", "--store",
         "s.db", first="error: judge metrics need the Gemini API or Vertex AI", files={"cases.jsonl": JSONL}),
    case("eval-from-store-not-a-database", "eval", "--from-store", "--metrics", "tool_call_count", "--store",
         "notes.db", first=CANNOT_OPEN, files={"notes.db": NOT_A_DATABASE}),
    case("eval-vertex-json-dataset", "eval", "eval_dataset.json", "--metrics", "trajectory_exact_match", code=0,
         first="eval_dataset.json (2 rows)", files={"eval_dataset.json": json.dumps(ROWS)},
         contains="not stored (give --store to keep this run)"),
    case("eval-two-variants-by-name", "eval", "cases.jsonl", "--metrics",
         "trajectory_f1(match=name, name=f1_names),trajectory_f1", code=0, first="cases.jsonl (2 rows)",
         files={"cases.jsonl": JSONL}, contains="f1_names"),
    case("eval-row-without-reference", "eval", "cases.jsonl", "--metrics", "trajectory_exact_match", code=0,
         first="cases.jsonl (2 rows)", files={"cases.jsonl": JSONL.splitlines()[0] + "\n" + json.dumps(
             {"prompt": "hi", "predicted_trajectory": []}) + "\n"},
         contains="trajectory_exact_match: 1 of 2 row(s) not scored: row has no 'reference_trajectory' (1)"),
    case("eval-metric-that-scores-no-row", "eval", "cases.jsonl", "--metrics", "trajectory_exact_match,bleu",
         code=1, first="cases.jsonl (2 rows)", files={"cases.jsonl": JSONL},
         contains="FAILED nothing scored by: bleu"),
    # --- runs, sessions, watch ------------------------------------------------------------------------------
    case("runs-list-store-host-port", "runs", "list", "--store", "localhost:5432",
         first=f"error: store 'localhost:5432' {NEITHER}"),
    case("runs-list-not-a-database", "runs", "list", "--store", "notes.db", first=CANNOT_OPEN,
         files={"notes.db": NOT_A_DATABASE}),
    case("runs-show-unknown-id", "runs", "show", "1a2b3c4d5e6f", store=True,
         first="error: no evaluation run '1a2b3c4d5e6f' in the store"),
    case("sessions-list-no-store-yet", "sessions", "list", first="error: store toolpath.db does not exist"),
    case("sessions-list-store-colons", "sessions", "list", "--store", "::::", first=f"error: store '::::' {NEITHER}"),
    case("sessions-list-not-a-database", "sessions", "list", "--store", "notes.db", first=CANNOT_OPEN,
         files={"notes.db": NOT_A_DATABASE}),
    case("sessions-show-not-a-database", "sessions", "show", "s-1", "--store", "notes.db", first=CANNOT_OPEN,
         files={"notes.db": NOT_A_DATABASE}),
    case("watch-not-a-database", "watch", "--once", "--store", "notes.db", first=CANNOT_OPEN,
         files={"notes.db": NOT_A_DATABASE}),
    case("watch-negative-interval", "watch", "--interval", "-1", store=True,
         first="error: Invalid value for '--interval': -1.0 is not in the range x>=0.1. (see 'toolpath watch --help')"),
    case("sessions-list-limit-zero", "sessions", "list", "--limit", "0", store=True,
         first="error: Invalid value for '--limit': 0 is not in the range x>=1."),
    case("eval-unknown-option", "eval", "cases.jsonl", "--metric", "bleu", files={"cases.jsonl": JSONL},
         first="error: No such option '--metric'. (Did you mean one of: '--match', '--metrics'?) (see 'toolpath eval --help')"),
    # --- report ---------------------------------------------------------------------------------------------
    case("report-html-is-a-folder", "report", "--html", "out", store=True,
         first="error: --html out: is a folder; give a file name", files={"out/": ""}),
    case("report-html-in-missing-folder", "report", "--html", "missing/report.html", store=True,
         first="error: --html missing/report.html: folder missing does not exist"),
    case("report-run-and-replay", "report", "--run", "a", "--replay", "b", "--html", "r.html", store=True,
         first="error: give one of --run ID or --replay ID (or neither, for the latest)"),
    case("report-nothing-run-yet", "report", "--html", "r.html", "--store", "empty.db",
         first="error: no evaluation run or replay in sqlite:///empty.db yet", files={"empty.db": ""}),
    case("report-not-a-database", "report", "--html", "r.html", "--store", "notes.db", first=CANNOT_OPEN,
         files={"notes.db": NOT_A_DATABASE}),
    case("report-the-latest-run", "report", "--html", "r.html", store=True, code=0,
         first="reporting the latest dataset run,", creates=("r.html",)),
    # --- replay and export ----------------------------------------------------------------------------------
    case("replay-output-is-a-folder", "replay", "--agent", "agents:v1", "--output", "out", store=True,
         first="error: --output out: is a folder; give a file name", files={"agents.py": AGENTS, "out/": ""}),
    case("replay-threshold-without-value", "replay", "--agent", "agents:v1", "--threshold", "trajectory_f1",
         store=True, first="error: --threshold 'trajectory_f1': expected metric=number", files={"agents.py": AGENTS}),
    case("replay-threshold-of-no-metric", "replay", "--agent", "agents:v1", "--threshold", "trajectory_f2=1",
         store=True, first="error: threshold for trajectory_f2: not among the metrics", files={"agents.py": AGENTS}),
    case("replay-agent-toolpath-cannot-run", "replay", "--agent", "agents:NOT_AN_AGENT", store=True,
         first="error: --agent 'agents:NOT_AN_AGENT': cannot run an int as an agent", files={"agents.py": AGENTS}),
    case("replay-not-a-database", "replay", "--agent", "agents:v1", "--store", "notes.db", first=CANNOT_OPEN,
         files={"agents.py": AGENTS, "notes.db": NOT_A_DATABASE}),
    case("export-output-is-a-folder", "export", "--format", "jsonl", "--output", "out", store=True,
         first="error: --output out: is a folder; give a file name", files={"out/": ""}),
    case("export-output-in-missing-folder", "export", "--format", "evalset", "--output", "missing/x.evalset.json",
         store=True, first="error: --output missing/x.evalset.json: folder missing does not exist"),
    case("export-since-utc-as-json-prints-it", "export", "--format", "jsonl", "--output", "x.jsonl", "--since",
         "2026-11-01T00:00:00Z", store=True, code=0, first="wrote ", creates=("x.jsonl",)),
    case("export-since-with-an-offset", "export", "--format", "jsonl", "--output", "x.jsonl", "--since",
         "2026-11-01T09:00:00+02:00", store=True, code=0, first="wrote ", creates=("x.jsonl",)),
    case("export-since-not-a-time", "export", "--format", "jsonl", "--output", "x.jsonl", "--since", "yesterday",
         store=True, first="error: Invalid value for '--since': 'yesterday' is not an ISO 8601 date or time"),
    case("export-store-colons", "export", "--format", "jsonl", "--output", "x.jsonl", "--store", "::::",
         first=f"error: store '::::' {NEITHER}"),
    # --- collect (ports: {busy} is in use, {free} is not) -----------------------------------------------------
    case("collect-http-port-in-use", "collect", "--store", "c.db", "--http-port", "{busy}", "--grpc-port", "0",
         first="error: --http-port {busy}: cannot listen on 127.0.0.1:{busy} (Address already in use)"),
    case("collect-grpc-port-in-use", "collect", "--store", "c.db", "--http-port", "0", "--grpc-port", "{busy}",
         first="error: --grpc-port {busy}: cannot listen on 127.0.0.1:{busy} (Address already in use)"),
    case("collect-bad-host", "collect", "--store", "c.db", "--host", "nosuchhost.invalid", "--http-port", "{free}",
         "--grpc-port", "0", first="error: --host 'nosuchhost.invalid': not an address of this machine"),
    case("collect-port-out-of-range", "collect", "--store", "c.db", "--http-port", "70000",
         first="error: --http-port 70000: not a port number (0 to 65535; 0 turns it off)"),
    case("collect-online-is-a-folder", "collect", "--store", "c.db", "--online", "conf", "--http-port", "{free}",
         "--grpc-port", "0", first="error: conf: is a folder; give the online.toml file in it", files={"conf/": ""}),
    case("collect-online-judge-without-credentials", "collect", "--store", "c.db", "--online", "online.toml",
         "--http-port", "{free}", "--grpc-port", "0", first="error: judge metrics need the Gemini API or Vertex AI",
         files={"online.toml": 'metrics = ["tool_call_count", "fluency"]\n'}),
    case("collect-online-cost-budget-on-a-new-store", "collect", "--store", "c.db", "--online", "online.toml",
         "--http-port", "{free}", "--grpc-port", "0", env={"GOOGLE_API_KEY": "k"},
         first="error: online: evaluator 'j': budget in cost: the judge model 'gemini-2.5-flash' has no price",
         files={"online.toml": '[[evaluator]]\nname = "j"\nmetrics = ["fluency"]\nbudget = { cost_per_hour = 1 }\n'}),
    case("collect-online-budget-smaller-than-one-call", "collect", "--store", "c.db", "--online", "online.toml",
         "--http-port", "{free}", "--grpc-port", "0", env={"GOOGLE_API_KEY": "k"},
         first="error: online: evaluator 'j': its budget (tokens_per_hour of 5000) has no room for one judge call",
         files={"online.toml": '[[evaluator]]\nname = "j"\nmetrics = ["fluency"]\nbudget = { tokens_per_hour = 5000 }\n'}),
    case("collect-online-with-workers-checks-the-config-first", "collect", "--store", "c.db", "--online",
         "online.toml", "--workers", "2", "--http-port", "{free}", "--grpc-port", "0",
         first="error: online.toml: unknown key(s) metric; known: ", files={"online.toml": 'metric = ["x"]\n'}),
    case("collect-not-a-database", "collect", "--store", "notes.db", "--http-port", "{free}", "--grpc-port", "0",
         first=CANNOT_OPEN, files={"notes.db": NOT_A_DATABASE}),
    case("collect-config-unknown-key", "collect", "--config", "collector.toml",
         first="error: collector.toml: unknown key 'http_prot' (known: ", contains="grpc_port, host, http_port,",
         files={"collector.toml": 'store = "c.db"\nhttp_prot = 4318\n'}),
    case("collect-config-bad-value", "collect", "--config", "collector.toml",
         first="error: collector.toml: max_in_flight: 0 is not in the range x>=1.",
         files={"collector.toml": 'store = "c.db"\nmax_in_flight = 0\n'}),
    case("collect-config-not-toml", "collect", "--config", "collector.toml",
         first="error: collector.toml: not valid TOML (", files={"collector.toml": "http_port = \n"}),
    case("collect-config-missing", "collect", "--config", "nope.toml", first="error: nope.toml: no such file"),
    # --- db, demo, metrics ----------------------------------------------------------------------------------
    case("db-upgrade-unknown-revision", "db", "upgrade", "--store", "new.db", "--revision", "zzz",
         first="error: --revision 'zzz': no such revision (known: 0001, 0002, 0003, "),
    case("db-current-on-a-folder", "db", "current", "--store", "folder.db",
         first="error: store sqlite:///folder.db: folder.db is a folder, not a database file", files={"folder.db/": ""}),
    case("db-current-not-a-database", "db", "current", "--store", "notes.db", first=CANNOT_OPEN,
         files={"notes.db": NOT_A_DATABASE}),
    case("demo-not-a-database", "demo", "--store", "notes.db", first=CANNOT_OPEN, files={"notes.db": NOT_A_DATABASE}),
    case("demo-store-host-port", "demo", "--store", "localhost:5432", first=f"error: store 'localhost:5432' {NEITHER}"),
    case("metrics", "metrics", code=0, first=f"{len(toolpath.metric_names())} metrics"),
    # --- the second hostile pass -------------------------------------------------------------------------------
    case("eval-nan-in-jsonl", "eval", "nan.jsonl", "--metrics", "trajectory_exact_match,trajectory_precision",
         first="error: nan.jsonl:2: not valid JSON (NaN is not a JSON number: write null or a string, column 66)",
         files={"nan.jsonl": JSONL.splitlines()[0] + "\n" + '{"predicted_trajectory": [{"tool_name": "x", "tool_input": '
                '{"v": NaN}}], "reference_trajectory": []}\n'}),
    case("eval-infinity-in-json-document", "eval", "eval_dataset.json", "--metrics", "trajectory_exact_match",
         first="error: eval_dataset.json:4:8: not valid JSON (-Infinity is not a JSON number: write null or a string)",
         files={"eval_dataset.json": '[\n {"prompt": "a",\n  "predicted_trajectory": [],\n  "x": -Infinity}\n]\n'}),
    case("eval-nan-in-csv-cell", "eval", "cases.csv", "--metrics", "trajectory_exact_match",
         first="error: cases.csv:2: predicted_trajectory: not valid JSON (NaN is not a JSON number",
         files={"cases.csv": 'prompt,predicted_trajectory,reference_trajectory\n'
                             'a,"[{""tool_name"": ""x"", ""tool_input"": {""v"": NaN}}]",[]\n'}),
    case("eval-key-given-twice", "eval", "twice.jsonl", "--metrics", "trajectory_exact_match",
         first="error: twice.jsonl:1: not valid JSON (key 'prompt' given twice in one object, column 17)",
         files={"twice.jsonl": '{"prompt": "a", "prompt": "b", "predicted_trajectory": [], '
                               '"reference_trajectory": []}\n'}),
    case("eval-limit-without-from-store", "eval", "cases.jsonl", "--metrics", "trajectory_exact_match", "--limit",
         "3", first="error: --limit: only with --from-store or --from-spans", files={"cases.jsonl": JSONL}),
    case("eval-session-and-agent-name-without-from-store", "eval", "cases.jsonl", "--metrics",
         "trajectory_exact_match", "--session", "s-1", "--agent-name", "bot",
         first="error: --agent-name, --session: only with --from-store or --from-spans", files={"cases.jsonl": JSONL}),
    case("eval-quiet-prints-the-summary-line", "eval", "cases.jsonl", "--metrics", "trajectory_exact_match",
         "--quiet", code=0, first="cases.jsonl (2 rows): trajectory_exact_match 1.000 (2/2)",
         files={"cases.jsonl": JSONL}),
    case("eval-simulated-user-with-no-turns", "eval", "chat.evalset.json", "--agent", "agents:v1",
         first="error: test_config.json: $.user_simulator_config.max_allowed_invocations: must be at least 1",
         files={"agents.py": AGENTS, "chat.evalset.json": json.dumps({"eval_set_id": "s", "eval_cases": [
             {"eval_id": "c", "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "p"}}]}),
                "test_config.json": json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0},
                                                "user_simulator_config": {"max_allowed_invocations": 0}})}),
    case("eval-set-judge-without-credentials-creates-no-store", "eval", "set.evalset.json", "--agent", "agents:v1",
         "--store", "e.db", first="error: judge metrics need the Gemini API or Vertex AI",
         files={"agents.py": AGENTS, "set.evalset.json": json.dumps({"eval_set_id": "s", "eval_cases": [
             {"eval_id": "c", "conversation": [{"user_content": {"parts": [{"text": "hi"}]},
                                                "final_response": {"parts": [{"text": "Done."}]}}]}]}),
                "test_config.json": json.dumps({"criteria": {"final_response_match_v2": 0.8}})}),
    case("demo-worst-negative", "demo", "--worst", "-1",
         first="error: Invalid value for '--worst': -1 is not in the range x>=0."),
    case("ui-empty-token", "ui", "--token", "", store=True,
         first="error: Invalid value for '--token': empty (an unset variable?)"),
    case("ui-agent-of-no-module", "ui", "--agent", "nosuch.mod:x", "--port", "0", store=True,
         first="error: --agent 'nosuch.mod:x': cannot import 'nosuch.mod' (No module named 'nosuch')"),
    case("ui-port-in-use", "ui", "--port", "{busy}", store=True,
         first="error: --port {busy}: cannot listen on 127.0.0.1:{busy} (Address already in use)"),
    case("replay-agent-is-a-module", "replay", "--agent", "my_app:time", store=True,
         first="error: --agent 'my_app:time': time is the module time, not an agent",
         files={"my_app.py": "import time\n"}),
    case("db-prune-zero-days", "db", "prune", "--older-than", "0d", store=True,
         first="error: --older-than '0d': must be more than zero"),
    case("collect-empty-token", "collect", "--store", "c.db", "--token", " ",
         first="error: Invalid value for '--token': empty (an unset variable?)"),
    case("collect-config-empty-token", "collect", "--config", "collector.toml",
         first="error: collector.toml: token: empty (an unset variable?)",
         files={"collector.toml": 'store = "c.db"\ntoken = ""\n'}),
    case("collect-config-flag-as-string", "collect", "--config", "collector.toml",
         first="error: collector.toml: no_redact: expected true or false, got 'no'",
         files={"collector.toml": 'store = "c.db"\nno_redact = "no"\n'}),
    case("eval-set-without-cases", "eval", "none.evalset.json", "--agent", "agents:v1", code=1,
         first="FAILED nothing checked: none.evalset.json holds no eval case; --allow-empty lets such a run pass",
         files={"agents.py": AGENTS, "none.evalset.json": json.dumps({"eval_set_id": "none", "eval_cases": []})}),
    case("eval-set-without-cases-allowed", "eval", "none.evalset.json", "--agent", "agents:v1", "--allow-empty",
         code=0, first="nothing checked: none.evalset.json holds no eval case (--allow-empty)",
         files={"agents.py": AGENTS, "none.evalset.json": json.dumps({"eval_set_id": "none", "eval_cases": []})}),
    case("eval-folder-of-empty-eval-sets", "eval", "sets", "--agent", "agents:v1", code=1,
         first="FAILED nothing checked: sets holds no eval case",
         files={"agents.py": AGENTS, "sets/": "", "sets/a.evalset.json": json.dumps({"eval_set_id": "a",
                                                                                      "eval_cases": []})}),
    case("eval-nothing-scored-allowed", "eval", "cases.jsonl", "--metrics", "response_match_score", "--allow-empty",
         code=0, first="cases.jsonl (2 rows)", contains="allowed nothing scored by: response_match_score",
         files={"cases.jsonl": JSONL}),
    case("collect-both-ports-off-with-workers", "collect", "--store", "c.db", "--workers", "2", "--http-port", "0",
         "--grpc-port", "0", first="error: both --http-port and --grpc-port are 0: nothing to listen on"),
    case("collect-bad-host-with-workers", "collect", "--store", "c.db", "--workers", "2", "--host",
         "nosuchhost.invalid", first="error: --host 'nosuchhost.invalid': not an address of this machine"),
    case("collect-too-many-workers", "collect", "--store", "c.db", "--workers", "100000",
         first="error: --workers 100000: at most "),
    case("collect-bad-workers-names-no-variable", "collect", "--workers", "abc",
         first="error: Invalid value for '--workers': 'abc' is not a valid integer range."),
    # --- the third hostile pass: read-only stores, a newer toolpath's store, sizes past the limits ---------------
    case("eval-store-mode-ro", "eval", "cases.jsonl", "--metrics", "trajectory_exact_match", "--store",
         "sqlite:///toolpath.db?mode=ro", store=True, files={"cases.jsonl": JSONL},
         first=READ_ONLY + "toolpath eval stores its run in it"),
    case("eval-from-store-mode-ro", "eval", "--from-store", "--metrics", "tool_call_count", "--store",
         "sqlite:///toolpath.db?mode=ro", store=True, first=READ_ONLY + "toolpath eval stores its run in it"),
    case("replay-store-mode-ro", "replay", "--agent", "agents:v1", "--store", "sqlite:///toolpath.db?mode=ro",
         store=True, files={"agents.py": AGENTS}, first=READ_ONLY + "toolpath replay stores the replay in it"),
    case("db-prune-store-immutable", "db", "prune", "--older-than", "1d", "--store", "sqlite:///toolpath.db?immutable=1",
         store=True, first="error: store sqlite:///toolpath.db?immutable=1 is read-only (immutable=1): toolpath db "
                           "prune deletes from it"),
    case("sessions-list-store-mode-ro", "sessions", "list", "--json", "--store", "sqlite:///toolpath.db?mode=ro",
         store=True, code=0, first="[", contains='"session_id": "eval-'),
    case("runs-list-store-immutable", "runs", "list", "--json", "--store", "sqlite:///toolpath.db?immutable=1",
         store=True, code=0, first="[", contains='"kind": "dataset"'),
    case("export-store-mode-ro", "export", "--format", "jsonl", "--output", "x.jsonl", "--store",
         "sqlite:///toolpath.db?mode=ro", store=True, code=0, first="wrote ", creates=("x.jsonl",)),
    case("runs-list-store-option-misspelt", "runs", "list", "--store", "sqlite:///toolpath.db?mod=ro", store=True,
         first="error: store sqlite:///toolpath.db?mod=ro: unknown option 'mod' (SQLite's and its driver's: "),
    case("sessions-list-store-mode-misspelt", "sessions", "list", "--store", "sqlite:///toolpath.db?mode=readonly",
         store=True, first="error: store sqlite:///toolpath.db?mode=readonly: mode='readonly' is not one of SQLite's"),
    case("db-upgrade-newer-store", "db", "upgrade", store=True, sql=NEWER, first=MADE_BY_NEWER),
    case("eval-newer-store", "eval", "cases.jsonl", "--metrics", "trajectory_exact_match", "--store", "toolpath.db",
         store=True, sql=NEWER, files={"cases.jsonl": JSONL}, first=MADE_BY_NEWER),
    case("sessions-list-newer-store", "sessions", "list", store=True, sql=NEWER, first=MADE_BY_NEWER),
    case("collect-newer-store", "collect", "--store", "toolpath.db", "--http-port", "{free}", "--grpc-port", "0",
         store=True, sql=NEWER, first=MADE_BY_NEWER),
    case("db-current-newer-store", "db", "current", store=True, sql=NEWER, code=0,
         first="sqlite:///toolpath.db: schema at revision 0099 (newest this toolpath knows: "),
    case("runs-list-emptied-alembic-version", "runs", "list", store=True, sql="DELETE FROM alembic_version",
         first="error: store sqlite:///toolpath.db: table alembic_version records no revision, so which migrations its "
               "tables have is unknown"),
    case("db-prune-older-than-99999999d", "db", "prune", "--older-than", "99999999d", store=True, code=0,
         first="sqlite:///toolpath.db: pruned 0 span(s) of 0 trace(s), 0 invocation(s)"),
    case("db-prune-older-than-past-a-float", "db", "prune", "--older-than", "9" * 400 + "w", "--dry-run", store=True,
         code=0, first="sqlite:///toolpath.db: would prune 0 span(s) of 0 trace(s), 0 invocation(s)"),
    case("eval-jsonl-nested-100000-deep", "eval", "deep.jsonl", "--metrics", "trajectory_exact_match",
         first="error: deep.jsonl:1: not valid JSON (arrays and objects nested 100001 deep: too deep to read, column ",
         files={"deep.jsonl": '{"prompt": "a", "predicted_trajectory": ' + DEEP + "}\n"}),
    case("eval-json-document-nested-100000-deep", "eval", "eval_dataset.json", "--metrics", "trajectory_exact_match",
         first="error: eval_dataset.json:1:100001: not valid JSON (arrays and objects nested 100001 deep: too deep",
         files={"eval_dataset.json": "[" + DEEP + "]"}),
    case("eval-csv-cell-nested-30000-deep", "eval", "deep.csv", "--metrics", "trajectory_exact_match",
         first="error: deep.csv:2: predicted_trajectory: not valid JSON (arrays and objects nested 30000 deep: too deep",
         files={"deep.csv": "prompt,predicted_trajectory\na," + "[" * 30_000 + "]" * 30_000 + "\n"}),
    case("eval-evalset-nested-100000-deep", "eval", "deep.evalset.json", "--agent", "agents:v1",
         first="error: deep.evalset.json:1:", contains="not valid JSON (arrays and objects nested 100001 deep",
         files={"agents.py": AGENTS, "deep.evalset.json": '{"eval_set_id": "s", "eval_cases": ' + DEEP + "}"}),
    # --- spans that can never join a trace, requests not shaped as OTLP's -------------------------------------
    case("ingest-span-its-own-parent", "ingest", "loop.json", "--store", "sqlite:///t.db", code=0,
         first="read loop.json (otlp-json-lines): 1 span(s)",
         contains="rejected loop.json line 1: span 'loop': its parent_span_id is its own span_id",
         files={"loop.json": json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
             {"traceId": "7" * 32, "spanId": "a" * 16, "name": "ok", "startTimeUnixNano": "1"},
             {"traceId": "7" * 32, "spanId": "b" * 16, "parentSpanId": "b" * 16, "name": "loop"}]}]}]})},
         creates=("t.db", "t.db-toolpath-write.lock")),
    case("ingest-resource-spans-nan", "ingest", "nan.json", "--store", "sqlite:///t.db",
         first="error: nan.json line 1: not an OTLP JSON ExportTraceServiceRequest: Failed to parse resourceSpans "
               "field: repeated field resourceSpans must be in [] which is nan",
         files={"nan.json": '{"resourceSpans": NaN}'}),
]  # fmt: skip


@pytest.fixture(scope="module")
def ports() -> Iterator[dict[str, str]]:
    """``busy``: a port something listens on; ``free``: one nothing does."""
    with socket.socket() as busy, socket.socket() as probe:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
        probe.close()
        yield {"busy": str(busy.getsockname()[1]), "free": str(free)}


@contextlib.contextmanager
def deadline(seconds: int) -> Iterator[None]:
    def expire(*_: object) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def files_in(folder: Path) -> set[str]:
    """Every file and folder under ``folder``, but the store's own journal files (SQLite's -wal and -shm)."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if not p.name.endswith(("-wal", "-shm"))}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_command_with_bad_or_unusual_input(tmp_path, demo_dir, ports, case):
    for name, content in case.files.items():
        if name.endswith("/"):
            (tmp_path / name).mkdir()
        else:
            (tmp_path / name).write_text(content)
    if case.store:
        shutil.copy(demo_dir / "toolpath.db", tmp_path / "toolpath.db")
    if case.sql:
        with contextlib.closing(sqlite3.connect(tmp_path / "toolpath.db")) as conn, conn:
            conn.execute(case.sql)
    before = files_in(tmp_path)
    args = [arg.format(**ports) for arg in case.args]
    with deadline(60):  # a collector that wrongly starts would otherwise serve for ever
        result = run_cli(tmp_path, *args, env={**NO_CREDENTIALS, **case.env})
    output = result.stdout + result.stderr
    assert result.returncode == case.code, output
    assert "Traceback" not in output
    if case.code == 2:
        assert result.stderr.count("\n") == 1, result.stderr  # one line
        assert result.stderr.startswith(case.first.format(**ports)), result.stderr
        assert result.stdout == ""
    else:
        assert result.stdout.startswith(case.first), output
    assert case.contains in output
    assert files_in(tmp_path) - before <= set(case.creates)


def test_a_failed_replay_saves_no_run(tmp_path, demo_dir):
    """The output is checked before the replay runs: a bad --output leaves the store as it was."""
    shutil.copy(demo_dir / "toolpath.db", tmp_path / "toolpath.db")
    (tmp_path / "agents.py").write_text(AGENTS)
    runs = json.loads(run_cli(tmp_path, "runs", "list", "--json").stdout)
    result = run_cli(tmp_path, "replay", "--agent", "agents:v1", "--output", "missing/replay.json")
    assert result.returncode == 2 and "folder missing does not exist" in result.stderr
    assert json.loads(run_cli(tmp_path, "runs", "list", "--json").stdout) == runs
    sessions = json.loads(run_cli(tmp_path, "sessions", "list", "--json", "--limit", "500").stdout)
    assert not any(s["session_id"].startswith("replay-") for s in sessions)  # no agent ran either


@pytest.mark.parametrize(
    "reference", ["planted.py", "./planted.py", "sub/planted", "sub/planted:agent", "sub\\planted"]
)
def test_a_file_path_is_never_imported_as_an_agent(tmp_path, reference):
    """--agent takes a module; a path is refused before anything runs, and the file's top-level code never runs."""
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').close()\ndef agent(prompt):\n    return prompt\n"
    (tmp_path / "planted.py").write_text(code)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "planted.py").write_text(code)
    (tmp_path / "cases.jsonl").write_text('{"prompt": "hi", "reference": "hi"}\n')
    result = run_cli(tmp_path, "eval", "cases.jsonl", "--metrics", "exact_match", "--agent", reference)
    assert result.returncode == 2 and result.stderr.startswith("error: --agent")
    assert "not a file path" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not marker.exists()
