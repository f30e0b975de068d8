"""The serial side's pure parts: line splitting and protocol v1 decoding, fuzzed."""

from __future__ import annotations

import json
from typing import Any

import chess
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from touchmove import records
from touchmove.serial import lines
from touchmove.serial.commands import encode_command
from touchmove.serial.line_check import add_check
from touchmove.serial.lines import MAX_LINE, CheckFailed, DecodeError, LineSplitter, decode


def test_lines_split_across_chunks_and_crlf() -> None:
    s = LineSplitter()
    assert s.feed(b'{"a":1}\r\n{"b"') == [b'{"a":1}']
    assert s.feed(b':2}\n\n') == [b'{"b":2}']


def test_oversized_line_is_reported_once_and_the_stream_goes_on() -> None:
    s = LineSplitter(max_line=16)
    out = s.feed(b"x" * 40)
    out += s.feed(b"y" * 40 + b"\nok\n")
    assert out == [None, b"ok"]


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=40), max_size=20), st.data())
def test_chunking_does_not_change_the_lines(parts: list[bytes], data: st.DataObject) -> None:
    stream = b"\n".join(parts) + b"\n"
    whole = LineSplitter(max_line=MAX_LINE).feed(stream)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    chunked: list[bytes | None] = []
    s = LineSplitter(max_line=MAX_LINE)
    prev = 0
    for cut in [*cuts, len(stream)]:
        chunked += s.feed(stream[prev:cut])
        prev = cut
    assert chunked == whole


def test_messages() -> None:
    m = decode(b'{"type":"lift","sq":"e2","seq":5,"t":120}')
    assert m.record == records.Lift(120, chess.E2) and m.seq == 5
    hello = decode(b'{"type":"hello","proto":1,"fw":"0.1.0","board":"e661","boot":12345,"seq":0,"t":3}')
    assert hello.kind == "hello" and hello.record is None and hello.fields["boot"] == "12345"
    clock = decode(b'{"type":"button","id":"clock_black","seq":9,"t":50}')
    assert clock.record == records.Clock(50, chess.BLACK)
    other = decode(b'{"type":"button","id":"menu","seq":9,"t":50}')
    assert other.record is None and other.kind == "button"
    assert decode(b'{"type":"heartbeat","occ":"ffff00000000ffff","seq":2,"t":1000}').record == \
        records.Snapshot(1000, 0xFFFF00000000FFFF, "heartbeat")


@pytest.mark.parametrize("line", [
    None, b"", b"not json", b"[1,2]", b'{"type":"lift","sq":"z9","t":1}', b'{"type":"lift","sq":"e2"}',
    b'{"type":"lift","sq":"e2","t":1,"seq":-1}', b'{"type":"lift","sq":"e2","t":1,"seq":true}',
    b'{"type":"hello","proto":2,"board":"x","t":1}', b'{"type":"hello","proto":1,"board":"a/b","t":1}',
    b'{"type":"frobnicate","t":1}', b'{"type":"snapshot","occ":"xyz","t":1}', b'\xff\xfe{',
])
def test_bad_lines_raise_decode_error(line: bytes | None) -> None:
    with pytest.raises(DecodeError):
        decode(line)


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                          max_size=3), max_leaves=8)
message_like = st.fixed_dictionaries(
    {}, optional={"type": st.sampled_from(["lift", "place", "snapshot", "heartbeat", "hello", "button", "pong",
                                           "error", "clock", "promote", "setup", "takeback", "zzz"]) | json_values,
                  "t": st.integers(-5, 10**12) | json_values, "seq": st.integers(-2, 10**9) | json_values,
                  "sq": st.sampled_from(["e2", "h8", "i9", ""]) | json_values, "occ": st.text(max_size=20),
                  "board": json_values, "proto": json_values, "id": json_values, "fen": json_values})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.binary(max_size=600), message_like.map(lambda d: json.dumps(d).encode())))
def test_decoder_never_fails_other_than_decode_error(line: bytes) -> None:
    try:
        msg = decode(line)
    except DecodeError:
        return
    if msg.record is not None:
        assert records.parse_line(records.to_line(msg.record)) == msg.record


def test_commands_are_one_line() -> None:
    assert encode_command({"cmd": "leds", "squares": ["e2", "e4"], "color": [0, 48, 0]}).count(b"\n") == 1


# -- every number a board sends is range-checked -------------------------------------------------------------
huge = st.one_of(st.integers(min_value=records.MAX_T + 1), st.integers(max_value=-1),
                 st.sampled_from([10**20, 2**63, 2**64 + 1, -(2**63) - 1]))


@settings(max_examples=300, deadline=None)
@given(field=st.sampled_from(["t", "seq", "remaining", "ply"]), value=huge,
       kind=st.sampled_from(["lift", "clock", "takeback", "snapshot"]))
def test_out_of_range_numbers_are_decode_errors_saying_so(field: str, value: int, kind: str) -> None:
    msg = {"type": kind, "t": 5, "seq": 3, "sq": "e2", "side": "white", "remaining": 1000, "ply": 2,
           "occ": "ffff00000000ffff", field: value}
    if field == "remaining":
        msg["type"] = "clock"          # where the field means something
    elif field == "ply":
        msg["type"] = "takeback"
    with pytest.raises(DecodeError) as info:
        decode(json.dumps(msg).encode())
    assert info.value.out_of_range
    assert repr(field) in str(info.value)


@settings(max_examples=300, deadline=None)
@given(t=st.integers(0, records.MAX_T), seq=st.integers(0, lines.MAX_SEQ),
       remaining=st.integers(0, records.MAX_REMAINING_MS))
def test_numbers_in_range_are_kept_exactly(t: int, seq: int, remaining: int) -> None:
    msg = decode(json.dumps({"type": "button", "id": "clock_black", "t": t, "seq": seq}).encode())
    assert (msg.t, msg.seq) == (t, seq)
    clock = decode(json.dumps({"type": "clock", "side": "black", "t": t, "remaining": remaining}).encode())
    assert clock.record == records.Clock(t, False, remaining)


@pytest.mark.parametrize("occ", ["-1", " ff", "f_f", "+1", "0x1", "1" * 17, ""])
def test_occupancy_is_hex_digits_only(occ: str) -> None:
    with pytest.raises(DecodeError):
        decode(json.dumps({"type": "snapshot", "t": 1, "occ": occ}).encode())


@pytest.mark.parametrize("boot", [{"a": 1}, [1], "x" * 65, 1.5, None])
def test_hello_boot_is_a_short_string_or_integer(boot: object) -> None:
    with pytest.raises(DecodeError):
        decode(json.dumps({"type": "hello", "t": 1, "proto": 1, "board": "b", "boot": boot}).encode())


# -- issue 21: one id rule, operator records only from operators, the firmware's identity ---------------------
def _hello(board: object, **extra: object) -> bytes:
    return json.dumps({"seq": 0, "t": 1, "type": "hello", "proto": 1, "board": board, **extra}).encode()


@pytest.mark.parametrize("board", ["bad\tid", "nul\0", "del\x7f", "a/b", "#", "a+b", "", " x", "-x", "x" * 65,
                                   "é", "\ud800", "a b", 7, None])
def test_a_hello_whose_id_breaks_the_rule_is_refused_naming_it(board: object) -> None:
    with pytest.raises(lines.BoardIdRefused) as caught:
        decode(_hello(board))
    assert caught.value.claimed == board
    assert str(caught.value).isascii() and str(caught.value).isprintable()


@settings(deadline=None, max_examples=400)
@given(st.text(max_size=80))
def test_every_board_id_a_hello_gets_past_is_one_topic_level_of_plain_ascii(board: str) -> None:
    from touchmove.board_ids import PATTERN

    try:
        msg = decode(_hello(board))
    except lines.BoardIdRefused as exc:
        assert exc.claimed == board and PATTERN.fullmatch(board) is None
        return
    assert msg.fields["board"] == board and PATTERN.fullmatch(board) is not None
    assert board.isascii() and board.isprintable() and not set(board) & set("/#+ \0")
    assert board.encode().decode("utf-8") == board and 1 <= len(board) <= 64


@pytest.mark.parametrize("obj", [
    {"type": "result", "result": "1-0", "reason": "resignation"}, {"type": "takeback", "ply": 1},
    {"type": "resync", "fen": chess.STARTING_FEN}, {"type": "setup", "fen": chess.STARTING_FEN}])
def test_operator_records_from_a_port_are_refused(obj: dict[str, object]) -> None:
    with pytest.raises(lines.OperatorRecordRefused, match="only from an operator"):
        decode(json.dumps({"seq": 3, "t": 10, **obj}).encode())


def test_what_a_board_sends_is_still_accepted() -> None:
    for obj in ({"type": "lift", "sq": "e2"}, {"type": "place", "sq": "e4"}, {"type": "snapshot", "occ": "0" * 16},
                {"type": "heartbeat", "occ": "0" * 16}, {"type": "button", "id": "clock_white"},
                {"type": "diag", "scan_us": 3}, {"type": "error", "why": "x"}, {"type": "pong", "id": 1},
                {"type": "clock", "side": "black", "remaining": 1000}, {"type": "promote", "piece": "n"}):
        decode(json.dumps({"seq": 1, "t": 10, **obj}).encode())


def test_the_hello_carries_the_firmware_and_a_bad_one_is_refused() -> None:
    assert decode(_hello("e661", fw="touchmove-fw/0.1.0")).fields["fw"] == "touchmove-fw/0.1.0"
    assert decode(_hello("e661")).fields["fw"] is None
    for bad in ("x" * 65, "a\nb", 5):
        with pytest.raises(DecodeError, match="'fw'"):
            decode(_hello("e661", fw=bad))


def _fw_line(kind: str, seq: int, t: int, **fields: Any) -> bytes:
    """A line as the touchmove firmware writes it (its fields in order, its check last)."""
    middle = "".join(f",{json.dumps(k)}:{json.dumps(v, separators=(',', ':'))}" for k, v in fields.items())
    return add_check(f'{{"type":"{kind}"{middle},"seq":{seq},"t":{t}').encode()


def test_a_spliced_line_that_is_still_valid_json_is_refused() -> None:
    """The head of one line run into the tail of another (TinyUSB's buffer overwritten behind a parked packet
    while the host had the port closed) can make a record no board sent: a lift of e4 here. Without the check
    the decoder took it; with the check it is refused."""
    a = _fw_line("lift", 5, 7000, sq="e2")
    b = _fw_line("place", 30, 7588, sq="e4")
    spliced = a[:a.index(b'"sq"')] + b[b.index(b'"sq"'):]
    assert json.loads(spliced) == {**json.loads(b), "type": "lift"}  # valid JSON, a plausible record
    assert decode(a).record == records.Lift(7000, chess.E2) and decode(a).checked
    with pytest.raises(CheckFailed):
        decode(spliced)
    # the same splice of lines from firmware without the check: nothing tells it from a real record
    old = [json.dumps({k: v for k, v in json.loads(x).items() if k != "ck"}, separators=(",", ":")).encode()
           for x in (a, b)]
    assert decode(old[0][:old[0].index(b'"sq"')] + old[1][old[1].index(b'"sq"'):]).record == \
        records.Lift(7588, chess.E4)


def test_old_firmware_without_the_check_still_works_and_a_board_with_it_must_keep_it() -> None:
    plain = b'{"type":"lift","sq":"e2","seq":5,"t":120}'
    assert decode(plain).record == records.Lift(120, chess.E2) and not decode(plain).checked
    with pytest.raises(CheckFailed):  # a board whose lines carry the check: a line without it was cut
        decode(plain, checked=True)
    hello = b'{"type":"hello","proto":1,"fw":"0.1.0","board":"e661","boot":1,"seq":0,"t":3}'
    assert decode(hello, checked=True).kind == "hello"  # restarted into older firmware
    with pytest.raises(CheckFailed):  # a "ck" not where the firmware puts it (last) is no check
        decode(b'{"type":"lift","ck":"00000000","sq":"e2","seq":5,"t":120}')
    assert "ck" not in decode(_fw_line("lift", 5, 120, sq="e2")).fields


@settings(deadline=None, max_examples=300)
@given(st.sampled_from(["lift", "place", "heartbeat", "button", "pong"]), st.integers(0, 2**40),
       st.integers(0, 2**40), st.sampled_from(["e2", "h8", "a1"]), st.data())
def test_any_corruption_of_a_checked_line_is_refused(kind: str, seq: int, t: int, sq: str,
                                                     data: st.DataObject) -> None:
    """A firmware line with bytes changed, dropped or run into another line's tail, from a board whose lines
    carried the check before (``checked``: a corruption of the key ``ck`` itself leaves no check): refused
    with a DecodeError (most as CheckFailed), never taken as a record (CRC-32 misses one in 2**32)."""
    fields: dict[str, Any] = {"heartbeat": {"occ": "ffff00000000ffff"}, "button": {"id": "clock_white"},
                              "pong": {"id": 7}}.get(kind, {"sq": sq})
    good = _fw_line(kind, seq, t, **fields)
    assert decode(good).checked
    how = data.draw(st.sampled_from(["flip", "drop", "splice"]))
    i = data.draw(st.integers(0, len(good) - 1))
    other = _fw_line("place", seq + 1, t + 1, sq="d4")
    if how == "flip":
        bad = good[:i] + bytes([good[i] ^ data.draw(st.integers(1, 255))]) + good[i + 1:]
    elif how == "drop":
        bad = good[:i] + good[i + data.draw(st.integers(1, 8)):]
    else:
        bad = good[:i] + other[data.draw(st.integers(1, len(other) - 1)):]
    if bad.strip() in (good, other):  # whitespace changed, or the whole of the other line: no corruption
        return
    with pytest.raises(DecodeError):
        decode(bad.rstrip(b"\r\n") or b"x", checked=True)
