"""An HTTP body is decoded by orjson when it can be and by json otherwise
(service.transports.http.server._decoded): either way the value, or the refusal, is
json's with the hook that refuses a name given twice in one object. Checked
on hand-picked bodies and on random JSON texts with repeated names, colons
inside strings and values orjson refuses."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.app.errors import ServiceError
from service.transports.http.server import _decoded, _first_line, _refuse_duplicates


def _by_json(raw: bytes) -> tuple[str, Any]:
    """What json alone, with the duplicate hook, makes of ``raw``."""
    try:
        return "value", json.loads(raw, object_pairs_hook=_refuse_duplicates)
    except ServiceError as exc:
        return "refused", exc.message
    except (ValueError, RecursionError) as exc:
        return "refused", f"the body is not valid JSON: {_first_line(str(exc))}"


def _by_service(raw: bytes) -> tuple[str, Any]:
    try:
        return "value", _decoded(raw)
    except ServiceError as exc:
        return "refused", exc.message


@pytest.mark.parametrize(
    "raw",
    [
        b'{"move":{"play":{"tile":{"a":1,"b":2},"train":{"mexican":0}}},"expectedVersion":"7"}',
        b'{"a":1,"a":2}',
        b'{"a":{"b":1,"b":1}}',
        b'[{"x":1},{"y":{"z":[{"q":1,"q":2}]}}]',
        b'{"a":"1:2","a":3}',  # a colon in a string hides no duplicate
        b'{"a":"x:y:z"}',
        b'{"requestId":"a:b","move":{"draw":{}}}',
        b'{"a":NaN}',
        b'\xef\xbb\xbf{"a":1}',  # a BOM: json takes it, orjson does not
        '{"a":1}'.encode("utf-16"),
        b'{"a":123456789012345678901234567890}',
        b'{"a":"\\ud800"}',  # a lone surrogate
        b'{"a":1}x',
        b'{"a":',
        b"[" * 2000 + b"]" * 2000,
        b'"just text"',
        b"\xff\xfe\x00",
    ],
)
def test_the_body_decodes_as_json_with_the_duplicate_hook(raw: bytes) -> None:
    assert _by_service(raw) == _by_json(raw)


_KEYS = st.sampled_from(["a", "b", "move", "x:y", 'q"', "é"])
_SCALARS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.booleans(),
    st.none(),
    st.text(alphabet=':,{}[]"ab\\', max_size=6),
    st.floats(allow_nan=False, allow_infinity=False),
)


def _render(value: Any) -> str:
    """JSON text of ``value``; a dict is given as a list of (name, value)
    pairs, so that a name may appear twice."""
    if isinstance(value, list) and value and value[0] == "object":
        return "{" + ",".join(f"{json.dumps(k)}:{_render(v)}" for k, v in value[1]) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_render(v) for v in value[1]) + "]"
    return json.dumps(value)


_TREES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.tuples(st.just("object"), st.lists(st.tuples(_KEYS, inner), max_size=4)).map(list),
        st.tuples(st.just("array"), st.lists(inner, max_size=4)).map(list),
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(_TREES, st.sampled_from(["", " ", "\n"]))
def test_random_bodies_decode_as_json_with_the_duplicate_hook(tree: Any, space: str) -> None:
    raw = (space + _render(tree) + space).encode()
    assert _by_service(raw) == _by_json(raw)
