"""CPython-only checks of the firmware's pure modules: property tests (hypothesis) of the debounce and of
the command reader, and the wire messages against the host's recording format (touchmove.records)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from touchmove_fw import config, protocol
from touchmove_fw.app import App
from touchmove_fw.debounce import Debouncer
from touchmove_fw.link import LINE, TOO_LONG, LineAssembler

from touchmove import records
from touchmove.serial.line_check import Check, check_line


class SteppedClock:
    def __init__(self) -> None:
        self.now = 0

    def ms(self) -> int:
        return self.now


class StaticBoard:
    def __init__(self) -> None:
        self.bits = bytearray((0xFF, 0xFF, 0, 0, 0, 0, 0xFF, 0xFF))

    def read(self, buf) -> None:
        buf[0:8] = self.bits


def _reference_debounce(samples: list[int], n: int) -> list[tuple[int, int]]:
    """The specification: the state flips after n consecutive samples that differ from it."""
    state, run, out = 0, 0, []
    for i, s in enumerate(samples):
        run = run + 1 if s != state else 0
        if run >= n:
            state, run = s, 0
            out.append((i, s))
    return out


@given(st.lists(st.integers(0, 1), max_size=200), st.integers(1, 6))
def test_debounce_matches_reference(samples: list[int], n: int) -> None:
    events: list[tuple[int, int]] = []
    d = Debouncer(1, lambda j, s, t: events.append((t, s)), n)
    d.reset(b"\x00")
    for i, s in enumerate(samples):
        d.update(bytes((s << 5,)), i)
    assert events == _reference_debounce(samples, n)


@given(st.lists(st.integers(0, 1), max_size=120))
def test_chatter_shorter_than_n_is_never_reported(glitches: list[int]) -> None:
    # any pattern in which no run of 1s reaches 4 samples reports nothing at n = 4
    samples = []
    for g in glitches:
        samples += [1, 1, 1, 0] if g else [0]
    events: list[tuple[int, int]] = []
    d = Debouncer(1, lambda j, s, t: events.append((t, s)), 4)
    d.reset(b"\x00")
    for i, s in enumerate(samples):
        d.update(bytes((s,)), i)
    assert events == []


def _app() -> tuple[App, list[str]]:
    lines: list[str] = []
    cfg = config.get("sim", {"timeline": None})
    app = App(cfg, StaticBoard(), SteppedClock(), lines.append, "e6614104032b8c2d", 12345)
    app.start()
    return app, lines


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(
    st.binary(max_size=80),
    st.sampled_from([b'{"cmd":"ping","id":1}\n', b'{"cmd":"snapshot"}\r\n', b"\x03", b"\n", b"\r\n",
                     b'{"cmd":"leds","clear":true}\n', b'{"cmd":"hello"}\n', b"x" * 300]),
), max_size=30))
def test_command_reader_fuzz(chunks: list[bytes]) -> None:
    app, lines = _app()
    la = LineAssembler()
    for chunk in chunks:
        for b in chunk:
            r = la.feed(b)
            if r == LINE:
                app.command(la.line())
            elif r == TOO_LONG:
                app.out.error("line too long")
    # every output line is one valid record, seq has no gaps, t never runs backwards
    last_t = 0
    for i, line in enumerate(lines):
        assert line.endswith("\n") and "\n" not in line[:-1]
        obj = json.loads(line)
        assert obj["seq"] == i and obj["t"] >= last_t
        last_t = obj["t"]
        rec = records.parse_line(line)
        assert not isinstance(rec, records.Other) or rec.known, line


def test_messages_are_records() -> None:
    """Each device message parses as the recording format, and re-encodes to the same keys and values."""
    samples = {
        "lift": protocol.msg("lift", protocol.square_fields(12), 4, 100),
        "place": protocol.msg("place", protocol.square_fields(28), 5, 200),
        "snapshot": protocol.msg("snapshot", protocol.occ_fields(b"\xff\xff\0\0\0\0\xff\xff"), 6, 300),
        "heartbeat": protocol.msg("heartbeat", protocol.occ_fields(b"\xff\xef\0\x10\0\0\xff\xff"), 7, 400),
        "hello": protocol.msg("hello", protocol.hello_fields("0.1.0", "e661", 99), 0, 0),
        "button": protocol.msg("button", protocol.button_fields("clock_white"), 8, 500),
        "pong": protocol.msg("pong", protocol.pong_fields(3), 9, 600),
        "error": protocol.msg("error", protocol.error_fields("bad json"), 10, 700),
    }
    for kind, line in samples.items():
        obj = json.loads(line)
        assert next(iter(obj)) == "type" and obj["type"] == kind
        rec = records.parse_line(line)
        assert rec.type == kind
        if not isinstance(rec, records.Other):
            again = records.to_dict(rec)
            assert {k: obj[k] for k in again} == again  # same values; seq is the extra key
            assert set(obj) - set(again) == {"seq", "ck"}
        else:
            assert rec.known
        assert check_line(line.rstrip(b"\n")) is Check.GOOD, line
    assert records.parse_line(samples["lift"]) == records.Lift(100, 12)
    assert records.parse_line(samples["heartbeat"]).occ == 0xFFFF0000_1000EFFF


def test_leds_for_all_64_squares_fit_one_command_line() -> None:
    """The host sends many squares as a mask; the firmware reads it back to the same squares, in 256 bytes."""
    from touchmove_fw import commands

    from touchmove.serial.commands import encode_command, leds_command

    names = [f + r for r in "12345678" for f in "abcdefgh"]
    cmd = leds_command(names, [255, 255, 255])
    line = encode_command(cmd)
    assert len(line) <= 256 and "mask" in cmd
    _, obj = commands.parse_command(line.rstrip(b"\n"))
    clear, squares, color = commands.parse_leds(obj)
    assert sorted(squares) == list(range(64)) and color == (255, 255, 255) and not clear
    few = leds_command(["e2", "e4"], [0, 48, 0])
    assert few == {"cmd": "leds", "squares": ["e2", "e4"], "color": [0, 48, 0]}
    some = leds_command(["a1", "h8", "e4", "d5", "c3", "b2", "g7", "f6", "a8"], [1, 2, 3])
    _, squares, _ = commands.parse_leds(commands.parse_command(encode_command(some).rstrip(b"\n"))[1])
    assert sorted(squares) == sorted([0, 63, 28, 35, 18, 9, 54, 45, 56])
    for bad in ("-1", "xyz", "1" * 17, ""):
        try:
            commands.parse_leds({"cmd": "leds", "mask": bad, "color": [1, 1, 1]})
        except commands.CommandError:
            continue
        raise AssertionError(bad)


def test_docs_name_every_key_board_json_may_set() -> None:
    """docs/firmware.md lists the keys boardfile.KEYS accepts (and the LED spec's), so a builder knows them."""
    from pathlib import Path

    from touchmove_fw import boardfile

    docs = (Path(__file__).resolve().parents[2] / "docs" / "firmware.md").read_text()
    section = docs[docs.index("## Start-up faults"):docs.index("## Scan rates")]
    missing = [k for k in [*boardfile.KEYS, *boardfile._LED_KEYS] if f"`{k}`" not in section and k != "memory"]
    assert missing == [], missing


def test_the_output_keeps_its_lines_whole_across_compaction() -> None:
    """Lines written in part, then more queued so the buffer moves what waits to its start (64 bytes at a time,
    through a small scratch buffer: no allocation of the whole): the port gets every line whole, in order."""
    from touchmove_fw.clock import SteppedClock
    from touchmove_fw.link import Output

    class Port:
        exact = True

        def __init__(self) -> None:
            self.took = bytearray()
            self.budget = 0

        def ready(self) -> bool:
            return self.budget > 0

        def write(self, mv: memoryview) -> int:
            self.budget -= 1
            self.took += bytes(mv)
            return len(mv)

    port = Port()
    out = Output(None, SteppedClock(), port)
    out.open()
    sent = 0
    for round_ in range(40):
        while out.send("heartbeat", ',"occ":"%016x"' % (sent * 7919)):
            sent += 1
        port.budget = 300 + 37 * round_  # the host takes part of it
        out.pump(10**6)
    port.budget = 10**6
    out.pump(10**6)
    lines = bytes(port.took).decode().splitlines()
    assert len(lines) == sent == out.seq
    assert [json.loads(x)["occ"] for x in lines] == ["%016x" % (k * 7919) for k in range(sent)]
    assert all(check_line(x.encode()) is Check.GOOD for x in lines)
