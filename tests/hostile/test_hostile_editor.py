"""Hostile what-if editor states: replayed exactly, or one ValidationError naming the place.

``STATES`` is one row per state given to :meth:`EditorState.from_dict` (or, as text, to
:meth:`EditorState.from_json`): ``None`` for a state that replays (its row and edits
arrive), or the words the :class:`~xai_core.ValidationError` must hold. A refused state
leaves the session as it was: no edit of it is kept.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import xai_core as xai
from xai_core.errors import ValidationError
from xai_whatif.editor import EditorState

RNG = np.random.default_rng(0)
X = RNG.uniform(0, 1, (20, 3))
NAMES = ["a", "b", "c"]
GOOD = {"row": 2, "feature": "b", "axes": ["a", "c"], "colour_by": "label", "method": "ig"}
EDIT = {"row": 4, "changes": {"a": 0.5}}


def _session():
    net = xai.nn.Sequential([xai.nn.Dense(2), xai.nn.Softmax()], input_shape=(3,), seed=0)
    return xai.what_if(net, X, (X[:, 0] > 0.5).astype(int), feature_names=NAMES)


#: name -> (the state, None or the words the ValidationError must hold)
# fmt: off
STATES: dict[str, tuple[object, tuple | None]] = {
    "valid": ({**GOOD, "edits": [EDIT]}, None),
    "valid-no-edits": ({"row": 0}, None),
    "not-a-mapping": ([1, 2], ("state: expected an object", "a list of 2 items")),
    "a-string": ("row", ("state: expected an object", "'row'")),
    "no-row": ({"feature": "a"}, ("state: missing the key 'row'",)),
    "row-abc": ({"row": "abc"}, ("state: row: expected an integer >= 0", "'abc' (a string)")),
    "row-negative": ({"row": -1}, ("state: row: expected an integer >= 0", "-1")),
    "row-float": ({"row": 2.0}, ("state: row: expected an integer", "2.0")),
    "row-true": ({"row": True}, ("state: row: expected an integer", "true")),
    "row-10**400": ({"row": 10**400}, ("state: row must be in [0, 20)",)),
    "row-past-the-data": ({"row": 20}, ("state: row must be in [0, 20)",)),
    "edits-5": ({"row": 0, "edits": 5}, ("state: edits: expected a list", "5 (an integer)")),
    "edits-a-dict": ({"row": 0, "edits": EDIT}, ("state: edits: expected a list",)),
    "edit-a-string": ({"row": 0, "edits": ["a"]}, ("state: edits[0]: expected an object",)),
    "edit-without-row": ({"row": 0, "edits": [{"changes": {"a": 1.0}}]}, ("state: edits[0]: missing the key 'row'",)),
    "edit-without-changes": ({"row": 0, "edits": [{"row": 1}]}, ("state: edits[0]: missing the key 'changes'",)),
    "edit-row-abc": ({"row": 0, "edits": [{"row": "abc", "changes": {"a": 1.0}}]}, ("state: edits[0].row: expected an integer",)),
    "changes-a-list": ({"row": 0, "edits": [{"row": 1, "changes": [["a", 1.0]]}]}, ("state: edits[0].changes: expected an object",)),
    "change-10**400": ({"row": 0, "edits": [{"row": 1, "changes": {"a": 10**400}}]}, ("state: edits[0].changes.a", "a finite number", "401 digits")),
    "change-nan": ({"row": 0, "edits": [{"row": 1, "changes": {"a": float("nan")}}]}, ("state: edits[0].changes.a", "nan")),
    "change-a-list": ({"row": 0, "edits": [{"row": 1, "changes": {"a": [1]}}]}, ("state: edits[0].changes.a", "a list of 1 item")),
    "change-unknown-feature": ({"row": 0, "edits": [{"row": 1, "changes": {"zz": 1.0}}]}, ("state: edits[0]", "'zz'", "Available: a, b, c")),
    "second-edit-refused": ({"row": 0, "edits": [EDIT, {"row": 99, "changes": {"a": 1.0}}]}, ("state: edits[1]", "row must be in [0, 20)")),
    "axes-a-number": ({"row": 0, "axes": 5}, ("state: axes: expected null or a list",)),
    "axes-unknown": ({"row": 0, "axes": ["a", "zz"]}, ("state:", "'zz'")),
    "colour-by-unknown": ({"row": 0, "colour_by": "mood"}, ("state:", "colour_by", "'mood'")),
    "feature-a-list": ({"row": 0, "feature": ["a"]}, ("state: feature: expected a string or an integer",)),
    "method-a-number": ({"row": 0, "method": 3}, ("state: method: expected null or a string",)),
}
# fmt: on


@pytest.fixture(scope="module")
def session():
    return _session()


@pytest.mark.parametrize("case", list(STATES), ids=list(STATES))
def test_hostile_editor_state(session, case: str) -> None:
    """Each state replays exactly, or is one ValidationError naming the place; none is half-kept."""
    state, expect = STATES[case]
    w = session.clone()
    if expect is None:
        editor = EditorState.from_dict(w, state)
        assert editor.row == state["row"]
        assert [e.row for e in w.history] == [e["row"] for e in state.get("edits", [])]
        if state.get("edits"):
            assert w.table.X[4, 0] == 0.5
        again = EditorState.from_json(session.clone(), editor.to_json())
        assert again.to_dict() == editor.to_dict()
        return
    with pytest.raises(ValidationError) as info:
        EditorState.from_dict(w, state)
    for word in expect:
        assert word in str(info.value), (word, str(info.value))
    assert w.history == [] and np.array_equal(w.table.X, session.table.X)  # nothing kept


#: name -> (the JSON text, the words the ValidationError must hold)
# fmt: off
TEXTS: dict[str, tuple[bytes, tuple]] = {
    "not-json": (b"{row: 1}", ("state is not valid JSON",)),
    "latin1": ('{"row": 0, "feature": "caf\xe9"}'.encode("latin-1"), ("state is not UTF-8", "0xe9")),
    "100k-deep": (b"[" * 100_000 + b"]" * 100_000, ("state nests", "100,000 deep")),
    "duplicate-row": (b'{"row": 0, "row": 1}', ("'row' twice",)),
    "huge-number": (b'{"row": 1e400}', ("state: row: expected an integer", "inf")),
    "5000-digits": (b'{"row": ' + b"9" * 5000 + b"}", ("state is not valid JSON", "4300")),
    "row-abc": (json.dumps({"row": "abc"}).encode(), ("state: row: expected an integer",)),
}
# fmt: on


@pytest.mark.parametrize("case", list(TEXTS), ids=list(TEXTS))
def test_hostile_editor_json(session, case: str) -> None:
    """The state's JSON is read by the bounded reader: every fault is one ValidationError."""
    text, words = TEXTS[case]
    with pytest.raises(ValidationError) as info:
        EditorState.from_json(session.clone(), text)
    for word in words:
        assert word in str(info.value), (word, str(info.value))
