"""``json_identity`` is equal for two values exactly when their canonical JSON texts are: the strict (JSON) rule of
the behaviour metrics and ``json_strict`` trajectory metrics, without writing the text of every call."""

from __future__ import annotations

import datetime
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from toolpath.values import canonical_json, json_identity

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, -0.0, 1.0, 2.5, 1e20, math.inf, math.nan]),
    st.sampled_from(["", "a", "1", "true", "null"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "1"]), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=3000, deadline=None)
@given(VALUES, VALUES)
def test_equal_exactly_when_the_canonical_texts_are(a, b):
    assert (json_identity(a) == json_identity(b)) == (canonical_json(a) == canonical_json(b))
    if canonical_json(a) == canonical_json(b):
        assert hash(json_identity(a)) == hash(json_identity(b))


def test_the_cases_the_rule_names():
    assert json_identity({"n": 1}) == json_identity({"n": 1.0})
    assert json_identity({"b": True}) != json_identity({"b": 1})
    assert json_identity([math.nan]) == json_identity([float("nan")])
    assert json_identity({"a": 1, "b": [2]}) == json_identity({"b": (2,), "a": 1})  # key order, tuple as array
    assert json_identity([1]) != json_identity({"0": 1})
    assert json_identity({}) != json_identity([]) != json_identity(None)
    day = datetime.date(2026, 1, 2)
    assert json_identity({"d": day}) == json_identity({"d": repr(day)})  # as canonical_json writes it
    assert canonical_json({"d": day}) == canonical_json({"d": repr(day)})
