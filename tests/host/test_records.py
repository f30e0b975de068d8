"""The recording format: parsing, round trips, and bad input that never loses the rest."""

from __future__ import annotations

import json

import chess
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from touchmove import records
from touchmove.records import Clock, Lift, Other, Place, Problem, Promote, RecordError, Setup, Snapshot


def test_each_record_type_reads() -> None:
    assert records.parse_line('{"t": 5, "type": "lift", "sq": "e2"}') == Lift(5, chess.E2)
    assert records.parse_line('{"t": 6, "type": "place", "sq": "E4", "seq": 3}') == Place(6, chess.E4)
    assert records.parse_line('{"t": 7, "type": "snapshot", "occ": "ffff00000000ffff"}') == Snapshot(
        7, 0xFFFF00000000FFFF)
    assert records.parse_line('{"t": 8, "type": "promote", "piece": "n"}') == Promote(8, chess.KNIGHT)
    assert records.parse_line('{"t": 9, "type": "clock", "side": "black", "remaining": 60000}') == Clock(
        9, chess.BLACK, 60000)
    assert records.parse_line('{"t": 9, "type": "clock", "side": "white", "late_ms": 1300}') == Clock(
        9, chess.WHITE, late_ms=1300)
    setup = records.parse_line('{"t": 10, "type": "setup", "fen": "8/8/8/8/8/8/8/K6k w - - 0 1"}')
    assert setup == Setup(10, "8/8/8/8/8/8/8/K6k w - - 0 1")


def test_occupancy_bit_zero_is_a1() -> None:
    snap = records.parse_line('{"t": 0, "type": "snapshot", "occ": "0000000000000001"}')
    assert isinstance(snap, Snapshot)
    assert snap.occ == chess.BB_A1


@pytest.mark.parametrize("line", [
    '{"t": 1, "type": "lift", "sq": "e2"}',
    '{"t": 2, "type": "snapshot", "occ": "ffff00000000ffff"}',
    '{"t": 3, "type": "clock", "side": "white"}',
    '{"t": 3, "type": "clock", "side": "black", "remaining": 59000, "late_ms": 1300}',
    '{"t": 4, "type": "setup", "fen": "8/8/8/8/8/8/8/K6k w - - 0 1", "chess960": true}',
    '{"t": 5, "type": "takeback", "ply": 3}',
    '{"t": 5, "type": "result", "result": "0-1", "reason": "time"}',
    '{"t": 6, "type": "hello", "proto": 1, "fw": "0.1.0"}',
])
def test_round_trip(line: str) -> None:
    record = records.parse_line(line)
    assert json.loads(records.to_line(record)) == json.loads(line)


@pytest.mark.parametrize(("line", "reason"), [
    ("not json", "not JSON"),
    ("[1, 2]", "JSON object"),
    ('{"type": "lift", "sq": "e2"}', "'t'"),
    ('{"t": -1, "type": "lift", "sq": "e2"}', "'t'"),
    ('{"t": 1.5, "type": "lift", "sq": "e2"}', "'t'"),
    ('{"t": true, "type": "lift", "sq": "e2"}', "'t'"),
    ('{"t": 1, "type": "lift", "sq": "i9"}', "not a square"),
    ('{"t": 1, "type": "lift"}', "'sq'"),
    ('{"t": 1, "type": "snapshot", "occ": "xyz"}', "hexadecimal"),
    ('{"t": 1, "type": "snapshot", "occ": "00000000000000000"}', "16 hex"),
    ('{"t": 1, "type": "promote", "piece": "k"}', "q, r, b, n"),
    ('{"t": 1, "type": "clock", "side": "red"}', "white"),
    ('{"t": 1, "type": "clock", "side": "white", "late_ms": 60001}', "'late_ms'"),
    ('{"t": 1, "type": "clock", "side": "white", "late_ms": "soon"}', "'late_ms'"),
    ('{"t": 1, "type": "setup", "fen": "not a fen"}', "FEN"),
    ('{"t": 1, "type": "takeback", "ply": 0}', "'ply'"),
])
def test_bad_lines_say_why(line: str, reason: str) -> None:
    with pytest.raises(RecordError) as info:
        records.parse_line(line, lineno=7)
    assert info.value.lineno == 7
    assert reason in str(info.value)
    assert str(info.value).startswith("line 7:")


def test_reading_skips_bad_lines_and_keeps_the_rest() -> None:
    lines = [
        '{"t": 1, "type": "lift", "sq": "e2"}',
        "garbage",
        "",
        '{"t": 2, "type": "teleport", "sq": "e4"}',
        '{"t": 3, "type": "hello", "proto": 1}',
        '{"t": 4, "type": "place", "sq": "e4"}',
        '{"t": 2, "type": "clock", "side": "white"}',
    ]
    out = list(records.read(lines))
    problems = [p for p in out if isinstance(p, Problem)]
    kept = [r for r in out if not isinstance(r, Problem)]
    assert [p.lineno for p in problems] == [2, 4, 7]
    assert "unknown record type 'teleport'" in problems[1].message
    assert "backwards" in problems[2].message
    assert kept == [Lift(1, chess.E2), Place(4, chess.E4), Clock(4, chess.WHITE)]


def test_protocol_only_types_are_known() -> None:
    record = records.parse_line('{"t": 1, "type": "button", "id": "clock_white"}')
    assert isinstance(record, Other)
    assert record.known
    unknown = records.parse_line('{"t": 1, "type": "mystery"}')
    assert isinstance(unknown, Other)
    assert not unknown.known


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300)
@given(st.one_of(st.text(max_size=200), st.binary(max_size=200).map(lambda b: b.decode("latin-1"))))
def test_fuzz_any_text_is_a_record_or_a_clear_error(text: str) -> None:
    try:
        records.parse_line(text, 1)
    except RecordError as exc:
        assert exc.lineno == 1
        assert exc.reason


@settings(max_examples=300)
@given(st.dictionaries(st.sampled_from(["t", "type", "sq", "occ", "piece", "side", "fen", "ply", "chess960",
                                        "remaining", "late_ms", "result", "reason"]),
                       json_values | st.sampled_from(["1-0", "0-1", "1/2-1/2", "resignation"]), max_size=6),
       st.sampled_from(["lift", "place", "snapshot", "heartbeat", "promote", "clock", "setup", "takeback", "result",
                        None]))
def test_fuzz_wrong_types_in_known_records(obj: dict[str, object], kind: str | None) -> None:
    if kind is not None:
        obj["type"] = kind
    try:
        record = records.from_dict(obj)
    except RecordError as exc:
        assert exc.reason
    else:
        assert records.from_dict(records.to_dict(record)) == record


@settings(max_examples=100)
@given(st.lists(st.text(max_size=60) | st.just('{"t": 1, "type": "lift", "sq": "a1"}'), max_size=20))
def test_fuzz_reading_never_raises(lines: list[str]) -> None:
    good = sum(1 for line in lines if line == '{"t": 1, "type": "lift", "sq": "a1"}')
    out = list(records.read(lines))
    assert sum(1 for r in out if r == Lift(1, chess.A1)) >= good
