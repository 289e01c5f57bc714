"""Reviewers' annotations in real headless Chromium: a turn is labelled, scored and commented on from its
session's page (by keyboard too), kept with the reviewer's name and time, shown on the session, found by the
sessions filter, redacted like everything stored, and exported with ``toolpath export --format evalset`` in a
file ADK's own ``EvalSet`` loads. Screenshots at 1280 and 800 px."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.ui import Watched, announced_screenshot_folder, browser, screenshots, serve_ui
from tests.helpers.ui_stores import SUPPORT, debugging_store
from toolpath.store.annotations import annotations_of
from toolpath.store.store import Store

SECRET = "sk-" + "A1b2C3d4" * 5


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ui-review")
    url = debugging_store(folder)
    store = Store(url)
    with serve_ui(store, folder / "evalsets") as base:
        yield base, store, url, folder
    store.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    return announced_screenshot_folder(tmp_path_factory.getbasetemp())


def test_a_reviewer_labels_a_turn_and_finds_it_again(ui, shots):
    url, store, store_url, folder = ui
    with browser() as chromium:
        watched = Watched(chromium.new_page(viewport={"width": 1280, "height": 900}))
        page = watched.page
        page.goto(f"{url}/session?id={SUPPORT}")
        turn = page.locator("#turn-2")
        turn.locator("select.review-select").select_option("fail")
        turn.locator("input.review-score").fill("0.2")
        turn.locator("textarea.review-comment").fill(f"Should have said the backend is down. key {SECRET}")
        turn.locator("input.review-author").fill("Ada")
        turn.locator("button.review-save").click()
        page.wait_for_url(re.compile(r"/session\?id=support-7.*#turn-2$"))
        note = page.locator("#turn-2 tr.annotation")
        assert note.count() == 1
        assert note.locator("td.author").inner_text() == "Ada"
        assert note.locator(".review-label").inner_text() == "fail"
        assert note.locator("td.num").inner_text() == "0.200"
        comment = note.locator("td.comment").inner_text()
        assert comment.startswith("Should have said the backend is down.") and SECRET not in comment
        assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", note.locator("td").first.inner_text())

        # by keyboard, on another turn: the reviewer's name is remembered in this browser
        assert page.locator("#turn-4 details.review").get_attribute("open") is not None  # no review yet: open
        page.locator("#turn-4 select.review-select").focus()
        page.keyboard.press("ArrowDown")  # none -> pass
        page.keyboard.press("Tab")
        page.keyboard.type("1")
        page.keyboard.press("Tab")
        page.keyboard.type("Fine once the backend was back.")
        assert page.locator("#turn-4 input.review-author").input_value() == "Ada"
        page.locator("#turn-4 input.review-author").focus()
        page.keyboard.press("Enter")
        page.wait_for_url(re.compile(r"#turn-4$"))
        assert page.locator("#turn-4 .review-label").inner_text() == "pass"
        screenshots(page, shots, "annotations", (1280, 800))

        page.goto(f"{url}/sessions")
        page.select_option("#review-select", "fail")
        page.click("#filters button[type=submit]")
        page.wait_for_url(re.compile(r"review=fail"))
        assert [r.get_attribute("data-session") for r in page.locator("tr.session").all()] == [SUPPORT]
        page.goto(f"{url}/sessions?review=any&hide_eval=1")
        assert page.locator("tr.session").count() == 1

        # a case made from the reviewed session keeps the reviews of the turns it takes
        page.goto(f"{url}/session?id={SUPPORT}")
        page.locator("input[name=turn]").nth(0).uncheck()  # turns 2 to 5
        page.fill("#new-evalset", "reviewed")
        page.click("#add-button")
        page.wait_for_url(re.compile(r"/evalsets/reviewed"))
        assert watched.errors == []
    made = json.loads((folder / "evalsets" / "reviewed.evalset.json").read_text())["eval_cases"][0]
    assert [(a["turn"], a["label"]) for a in made["annotations"]] == [(1, "fail"), (3, "pass")]  # of its 4 turns

    turns = [inv.invocation_id for inv in store.get_session(SUPPORT).invocations]
    kept = annotations_of(store, turns)
    assert [(n.author, n.label, n.score) for n in kept[turns[1]]] == [("Ada", "fail", 0.2)]
    assert SECRET not in (kept[turns[1]][0].comment or "")  # redacted before it was stored

    out = folder / "support.evalset.json"
    result = run_cli(folder, "export", "--store", store_url, "--session", SUPPORT, "--format", "evalset",
                     "--output", str(out))  # fmt: skip
    assert result.returncode == 0, result.stderr
    (case,) = json.loads(out.read_text())["eval_cases"]
    assert [(a["turn"], a["author"], a["label"], a["score"]) for a in case["annotations"]] == [
        (2, "Ada", "fail", 0.2),
        (4, "Ada", "pass", 1.0),
    ]
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$", case["annotations"][0]["created_at"])
    from google.adk.evaluation.eval_set import EvalSet

    assert EvalSet.model_validate_json(out.read_text()).eval_cases[0].eval_id == SUPPORT


def test_an_empty_or_unknown_annotation_is_a_400(ui):
    url, store, _, _ = ui
    turn = store.get_session(SUPPORT).invocations[0].invocation_id
    with browser() as chromium:
        page = chromium.new_page()
        page.goto(f"{url}/sessions")
        headers = {"origin": url}
        empty = page.request.post(f"{url}/turn/{turn}/annotations", form={"author": "Ada"}, headers=headers)
        assert empty.status == 400 and "needs a label, a score or a comment" in empty.text()
        nobody = page.request.post(f"{url}/turn/{turn}/annotations", form={"label": "pass"}, headers=headers)
        assert nobody.status == 400 and "author" in nobody.text()
        bad = page.request.post(f"{url}/turn/{turn}/annotations", form={"label": "meh", "author": "A"}, headers=headers)
        assert bad.status == 400
        missing = page.request.post(
            f"{url}/turn/nope/annotations", form={"label": "pass", "author": "A"}, headers=headers
        )
        assert missing.status == 400 and "no turn" in missing.text()
        crossed = page.request.post(f"{url}/turn/{turn}/annotations", form={"label": "pass", "author": "A"},
                                    headers={"origin": "http://evil.example"})  # fmt: skip
        assert crossed.status == 403
    assert annotations_of(store, [turn])[turn] == []
