"""Framing of the three protocols: good frames decode; bad checks, truncated and garbage frames are a clear
error, and nothing is lost (the translator asks the board again and the adapter diffs what it says)."""

from __future__ import annotations

import chess
from hypothesis import given, settings
from hypothesis import strategies as st

from touchmove.boards import chesslink, chessnut, dgt
from touchmove.boards.base import ProtocolError
from touchmove.sim import harness
from touchmove.sim.dgt import field_of
from touchmove.sim.pieces import start_pieces

START = start_pieces(chess.Board())


def test_dgt_field_update_and_dump_decode() -> None:
    dec = dgt.FrameDecoder()
    frames = dec.feed(dgt.message(dgt.MSG_FIELD_UPDATE, bytes((52, 0))) + dgt.message(dgt.MSG_BOARD_DUMP, bytes(64)))
    assert frames == [dgt.Frame(dgt.MSG_FIELD_UPDATE, bytes((52, 0))), dgt.Frame(dgt.MSG_BOARD_DUMP, bytes(64))]
    assert dgt.to_square(52) == chess.E2 and dgt.to_square(0) == chess.A8 and dgt.to_square(63) == chess.H1


def test_dgt_truncated_frame_is_an_error_and_the_next_frame_survives() -> None:
    dec = dgt.FrameDecoder()
    good = dgt.message(dgt.MSG_FIELD_UPDATE, bytes((12, 7)))
    out = dec.feed(good[:4] + good)
    assert isinstance(out[0], ProtocolError) and "truncated" in str(out[0])
    assert out[1] == dgt.Frame(dgt.MSG_FIELD_UPDATE, bytes((12, 7)))


def test_dgt_garbage_and_wrong_lengths_are_errors() -> None:
    dec = dgt.FrameDecoder()
    out = dec.feed(b"\x01\x02" + dgt.header(dgt.MSG_FIELD_UPDATE, 9) + dgt.message(dgt.MSG_VERSION, b"\x01\x07"))
    errors = [o for o in out if isinstance(o, ProtocolError)]
    assert "garbage" in str(errors[0]) and any("wrong length" in str(e) for e in errors)
    assert out[-1] == dgt.Frame(dgt.MSG_VERSION, b"\x01\x07")


def test_dgt_clock_message_round_trip() -> None:
    reading = dgt.parse_clock(dgt.clock_payload(5_400_000 - 61_000, 3_723_000, "black"))
    assert reading is not None and reading.white_ms == 5_339_000 and reading.black_ms == 3_723_000
    assert reading.turn == "black" and reading.running


def test_dgt_recovery_finds_the_changes_after_what_the_host_saw() -> None:
    start = [0] * 64
    start[52], start[12] = 1, 7
    events = [("tag", dgt.EE_DOWNLOADED, 0), ("field", 52, 0), ("field", 36, 1), ("field", 12, 0), ("field", 28, 7)]
    seen = list(start)
    seen[52], seen[36] = 0, 1
    assert dgt.recover(start, seen, events) == [(12, 0), (28, 7)]


def test_chesslink_checks_and_bad_checks() -> None:
    msg = chesslink.encode("s" + chesslink.status_text(START))
    dec = chesslink.MessageDecoder()
    assert dec.feed(msg) == [("s", chesslink.status_text(START))]
    bad = msg[:-2] + (b"00" if msg[-2:] != b"00" else b"01")
    out = dec.feed(bad + chesslink.encode("v0107"))
    assert isinstance(out[0], ProtocolError) and "block check" in str(out[0])
    assert out[-1] == ("v", "0107")


def test_chesslink_truncated_status_is_an_error() -> None:
    msg = chesslink.encode("s" + chesslink.status_text(START))
    out = chesslink.MessageDecoder().feed(msg[:30] + chesslink.encode("v0107"))
    assert isinstance(out[0], ProtocolError) and "cut short" in str(out[0])
    assert out[-1] == ("v", "0107")


def test_chessnut_board_report_round_trip_and_wrong_length() -> None:
    body = chessnut.board_bytes(START)
    assert chessnut.parse_board(body) == START
    dec = chessnut.ReportDecoder()
    report = bytes((1, 0x24)) + body + bytes(4)
    out = dec.feed(bytes((1, 0x10)) + report)
    assert isinstance(out[0], ProtocolError) and out[1] == (1, body + bytes(4))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_fuzz_decoders_never_raise(data: bytes) -> None:
    for item in dgt.FrameDecoder().feed(data):
        assert isinstance(item, (dgt.Frame, ProtocolError))
    for item2 in chesslink.MessageDecoder().feed(data):
        assert isinstance(item2, (tuple, ProtocolError))
    for item3 in chessnut.ReportDecoder().feed(data):
        assert isinstance(item3, (tuple, ProtocolError))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.integers(0, 400))
def test_fuzz_translators_take_anything(data: bytes, cut: int) -> None:
    for protocol in ("dgt", "chesslink", "chessnut"):
        from touchmove.boards import translator_for

        tr = translator_for(protocol, "fuzz")
        tr.start(0)
        for line in tr.feed(data[:cut], 10) + tr.feed(data[cut:], 20):
            assert isinstance(line, dict) and "type" in line


def corrupt_every(n: int) -> object:
    count = {"i": 0}

    def corrupt(data: bytes) -> bytes:
        count["i"] += 1
        if count["i"] % n == 0 and len(data) > 3:
            return data[:2] + b"\x7f" + data[1:]      # a byte slipped in: the frame is broken
        return data

    return corrupt


def test_broken_frames_lose_no_move() -> None:
    """Frames broken now and then: each is an error line, the board is asked again, the game comes back."""
    from touchmove.rules import Engine

    moves = [chess.Move.from_uci(u) for u in ("e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6")]
    events = harness.game_events(chess.Board(), moves, 5)
    for protocol in ("dgt", "chesslink", "chessnut"):
        run = harness.run(protocol, chess.Board(), events, corrupt=corrupt_every(7))  # type: ignore[arg-type]
        assert run.translator is not None and run.translator.errors > 0, protocol
        eng = Engine()
        got = [e.uci for r in run.records for e in eng.feed(r) if e.type == "move"]
        got += [e.uci for e in eng.finish() if e.type == "move"]
        assert got == [m.uci() for m in moves], protocol


def test_dgt_serial_number_in_either_published_size_is_a_frame() -> None:
    """8 bytes (the 5 digits, as dgtbrd.h has it) and 12 (digits, a space, the version): both decode."""
    dec = dgt.FrameDecoder()
    out = dec.feed(dgt.message(dgt.MSG_SERIALNR, b"01234") + dgt.message(dgt.MSG_SERIALNR, b"01234 1.0")
                   + dgt.message(dgt.MSG_LONG_SERIALNR, b"0000012345"))
    assert out == [dgt.Frame(dgt.MSG_SERIALNR, b"01234"), dgt.Frame(dgt.MSG_SERIALNR, b"01234 1.0"),
                   dgt.Frame(dgt.MSG_LONG_SERIALNR, b"0000012345")]
    tr = dgt.DgtTranslator("sim")
    tr.start(0)
    lines = tr.feed(dgt.message(dgt.MSG_SERIALNR, b"01234"), 5)
    assert [line["type"] for line in lines] == ["hello"] and lines[0]["board"] == "dgt-01234"
    assert tr.errors == 0


def test_dgt_unknown_well_framed_message_is_skipped_and_counted_never_an_error() -> None:
    dec = dgt.FrameDecoder()
    unknown = dgt.message(0xA7, bytes(range(9)))      # an id not published here, well framed
    out = dec.feed(unknown + dgt.message(dgt.MSG_FIELD_UPDATE, bytes((12, 7))) + unknown[:5])
    assert out == [dgt.Frame(dgt.MSG_FIELD_UPDATE, bytes((12, 7)))]
    assert dec.unknown == {0xA7: 1}
    assert dec.feed(unknown[5:]) == [] and dec.unknown == {0xA7: 2}
    # a published id keeps its published sizes: a serial number of 10 bytes is an error
    bad = dec.feed(dgt.message(dgt.MSG_SERIALNR, b"1234567") + dgt.message(dgt.MSG_VERSION, b"\x01\x07"))
    assert isinstance(bad[0], ProtocolError) and "wrong length" in str(bad[0])
    assert bad[-1] == dgt.Frame(dgt.MSG_VERSION, b"\x01\x07")


def test_chesslink_unknown_reply_with_its_check_is_skipped_and_counted() -> None:
    dec = chesslink.MessageDecoder()
    out = dec.feed(chesslink.encode("i0123ABC") + chesslink.encode("v0107"))
    assert out == [("v", "0107")] and dec.unknown == {"i": 1}
    out = dec.feed(b"i0123ABC00" + chesslink.encode("v0107"))    # a bad check: garbage, said
    assert isinstance(out[0], ProtocolError) and out[-1] == ("v", "0107") and dec.unknown == {"i": 1}


def test_chessnut_unknown_report_framed_by_its_length_is_skipped_and_counted() -> None:
    body = chessnut.board_bytes(START)
    report = bytes((1, 0x24)) + body + bytes(4)
    dec = chessnut.ReportDecoder()
    out = dec.feed(bytes((0x23, 3, 9, 9, 9)) + report)
    assert out == [(1, body + bytes(4))] and dec.unknown == {0x23: 1}


def test_a_dgt_board_answering_with_the_8_byte_serial_number_is_bound_and_read() -> None:
    from touchmove.rules import Engine

    moves = [chess.Move.from_uci(u) for u in ("e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6")]
    events = harness.game_events(chess.Board(), moves, 5)
    run = harness.run("dgt", chess.Board(), events, serial_size=8)
    assert [line["board"] for line in run.lines if line["type"] == "hello"] == ["dgt-12345"]
    eng = Engine(settle_ms=300)
    got = [e.uci for r in run.records for e in eng.feed(r) if e.type == "move"]
    got += [e.uci for e in eng.finish() if e.type == "move"]
    assert got == [m.uci() for m in moves]


def test_dgt_recovery_reads_a_power_up_as_the_board_found_then() -> None:
    """A power-up in the memory (the board switched off and on): the board it found is one change (a list of 64
    codes: what was made while it was off is not in the memory), then the changes made after it; the host saw
    the changes before the power cut."""
    start = [0] * 64
    start[52], start[12], start[60] = 1, 7, 5
    # e2-e4 seen; e4-e5 made while the board was off; then ...c7 lifted and put on c5 after the power-up
    events = [("tag", dgt.EE_DOWNLOADED, 0), ("field", 52, 0), ("field", 36, 1), ("tag", dgt.EE_POWERUP, 0),
              ("field", 12, 7), ("field", 28, 1), ("field", 60, 5), ("field", 12, 0), ("field", 26, 7)]
    seen = list(start)
    seen[52], seen[36] = 0, 1
    found = [0] * 64
    found[12], found[28], found[60] = 7, 1, 5
    assert dgt.recover(start, seen, events) == [found, (12, 0), (26, 7)]
    # the power-up found the board as the host last saw it: nothing but the changes after it
    same = [("tag", dgt.EE_DOWNLOADED, 0), ("field", 52, 0), ("field", 36, 1), ("tag", dgt.EE_POWERUP, 0),
            ("field", 12, 7), ("field", 36, 1), ("field", 60, 5), ("field", 12, 0), ("field", 26, 7)]
    assert dgt.recover(start, seen, same) == [(12, 0), (26, 7)]


def test_dgt_recovery_counts_what_the_host_saw_when_a_position_repeats_in_the_memory() -> None:
    """Drop 20 s, game 262 of the bench: the host saw Kc6 and Rc1 live; with the link lost, Kd6 Rc2 Kc6 Rc1 Kd7
    were played. The board the host saw last comes again after ...Kc6 Rc1 (a repetition): taking the latest
    such board dropped four plies, and the game went on one repetition short with no alert. The count of
    entries the host was told live since the download says where it stopped."""
    c1, c2, c6, d6, d7 = (field_of(sq, False) for sq in (chess.C1, chess.C2, chess.C6, chess.D6, chess.D7))
    rook, king = dgt.CONTENT_CODES["R"], dgt.CONTENT_CODES["k"]
    start = [0] * 64
    start[c2], start[d6] = rook, king
    seen_live = [("field", c2, 0), ("field", c1, rook), ("field", d6, 0), ("field", c6, king)]   # Rc1 Kc6
    missed = [(c6, 0), (d6, king), (c1, 0), (c2, rook), (d6, 0), (c6, king), (c2, 0), (c1, rook), (c6, 0),
              (d7, king)]
    events = [("tag", dgt.EE_DOWNLOADED, 0), *seen_live, *(("field", f, code) for f, code in missed)]
    host_last = list(start)
    host_last[c2], host_last[c1], host_last[d6], host_last[c6] = 0, rook, 0, king
    assert dgt.recover(start, host_last, events, seen=4) == missed
    # without the count, the latest board equal to the host's (before ...Kd7) is all it has
    assert dgt.recover(start, host_last, events) == missed[-2:]
    # a count the log does not bear out (the host's board is not the one after that many entries): as before
    assert dgt.recover(start, host_last, events, seen=5) == missed[-2:]


def test_dgt_recovery_replays_a_change_that_overwrote_the_value_the_host_saw() -> None:
    """Consecutive changes of one square are one entry in the board's memory (drop 20 s, game 23 of the bench):
    ...exf5 seen by the host (a black pawn landing on f5), then, the link lost, exf5 (White's pawn taking on f5)
    and ...Re8. The memory holds f5 once, with White's pawn (p, then empty, then P), and the host's f5 differs
    from it: that entry is replayed too (before, the changes after it were, the capture on f5 lost: a wrong
    line of recovered plies)."""
    f5, e6, e4, a8, e8 = (field_of(sq, False) for sq in (chess.F5, chess.E6, chess.E4, chess.A8, chess.E8))
    pawn, black_pawn, black_rook = dgt.CONTENT_CODES["P"], dgt.CONTENT_CODES["p"], dgt.CONTENT_CODES["r"]
    start = [0] * 64
    start[f5], start[e6], start[e4], start[a8] = pawn, black_pawn, pawn, black_rook
    events = [("tag", dgt.EE_DOWNLOADED, 0), ("field", f5, 0), ("field", e6, 0), ("field", f5, pawn),
              ("field", e4, 0), ("field", a8, 0), ("field", e8, black_rook)]
    seen = list(start)
    seen[f5], seen[e6] = black_pawn, 0          # ...exf5 as the host saw it
    assert dgt.recover(start, seen, events) == [(f5, pawn), (e4, 0), (a8, 0), (e8, black_rook)]
