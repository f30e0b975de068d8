"""DGT electronic boards (serial or USB serial, 9600 8N1): framing, messages, and the translator to records.

Facts from DGT's protocol description (``dgtbrd.h``; its use is restricted: see docs/boards.md). Commands are
single bytes; replies start with a 3-byte header: the message id with the top bit set, then the total length
(header included) as 14 bits in two 7-bit bytes; every data byte has its top bit clear. Squares are numbered
a8 = 0, b8 = 1 ... h1 = 63 as the board lies (a board set up rotated numbers them the other way round: the
adapter detects that from the start position). Piece codes: 0 empty, 1-6 white P R N B K Q, 7-12 black, 13-15
the result pieces (draw, white wins, black wins).

The board scans its squares one by one (200-250 ms a scan) and reports every change as a field update with
no time: the host stamps it. So a capture can show as a code changing with no empty between, the old square may
clear after the new one fills, a slid piece shows on squares it crosses: the rules engine reads occupancy
changes in that order as it does for touchmove's own boards (its settle time and its slide and overlap
readings), and the adapter gives it the pieces.

The board keeps every change in a cyclic EEPROM log (8 kB) whether a host listens or not. After a reconnection
the translator reads it (``DGT_SEND_EE_MOVES``) and replays the changes made while the port was closed, before
the board dump that follows (which would otherwise be read as lost changes).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import chess

from touchmove.boards.adapter import RESULTS, Content
from touchmove.boards.base import ProtocolError, Translator, board_id

log = logging.getLogger("touchmove.boards.dgt")

# -- commands (host to board) ----------------------------------------------------------------------------------
SEND_RESET = 0x40
SEND_CLK = 0x41
SEND_BRD = 0x42
SEND_UPDATE = 0x43
SEND_UPDATE_BRD = 0x44
RETURN_SERIALNR = 0x45
SEND_EE_MOVES = 0x49
SEND_UPDATE_NICE = 0x4B
SEND_VERSION = 0x4D

# -- messages (board to host): id | 0x80 ----------------------------------------------------------------------
MESSAGE_BIT = 0x80
MSG_BOARD_DUMP = MESSAGE_BIT | 0x06
MSG_BWTIME = MESSAGE_BIT | 0x0D
MSG_FIELD_UPDATE = MESSAGE_BIT | 0x0E
MSG_EE_MOVES = MESSAGE_BIT | 0x0F
MSG_BUSADRES = MESSAGE_BIT | 0x10
MSG_SERIALNR = MESSAGE_BIT | 0x11
MSG_TRADEMARK = MESSAGE_BIT | 0x12
MSG_VERSION = MESSAGE_BIT | 0x13
MSG_BOARD_DUMP_50B = MESSAGE_BIT | 0x14
MSG_BOARD_DUMP_50W = MESSAGE_BIT | 0x15
MSG_BATTERY_STATUS = MESSAGE_BIT | 0x20
MSG_LONG_SERIALNR = MESSAGE_BIT | 0x22
#: The total sizes (header included) DGT has published for the messages of fixed size. The serial number comes
#: in two: 8 bytes (5 digits, as ``dgtbrd.h`` gives it) and 12 (5 digits, a space and the version "1.0", as
#: many boards answer).
FIXED_SIZES: dict[int, frozenset[int]] = {
    MSG_BOARD_DUMP: frozenset({67}), MSG_BWTIME: frozenset({10}), MSG_FIELD_UPDATE: frozenset({5}),
    MSG_BUSADRES: frozenset({5}), MSG_SERIALNR: frozenset({8, 12}), MSG_VERSION: frozenset({5}),
    MSG_BOARD_DUMP_50B: frozenset({53}), MSG_BOARD_DUMP_50W: frozenset({53}),
    MSG_BATTERY_STATUS: frozenset({7, 12}), MSG_LONG_SERIALNR: frozenset({13})}
#: Messages of variable size and their largest total size; the EEPROM dump is the largest (0x2000 - 0x100 + 3).
VARIABLE = {MSG_EE_MOVES: 0x2000, MSG_TRADEMARK: 256 + 3}
#: The largest total size believed of a message whose id DGT has not published here (a newer board's): framed by
#: its header, skipped and counted (:attr:`FrameDecoder.unknown`).
UNKNOWN_LIMIT = 256
HEADER = 3
#: The engine's settle time for a DGT board at least (ms): a scan takes up to 250 ms, so a piece slid over a
#: square is seen there for a whole scan; 300 reads slides as slides (bench/boards.py: 300 of 300 shared games
#: exact against 294 with 200).
MIN_SETTLE_MS = 300
#: Sent once the board has answered: version, the EEPROM log (changes made while no host listened), the board,
#: the clock, then field updates and clock times as they change.
SETUP = bytes((SEND_VERSION, SEND_EE_MOVES, SEND_BRD, SEND_CLK, SEND_UPDATE_NICE))
#: The watch on the link (ms of board time): the board is checked this often (a board dump asked for, with
#: update mode sent again: a board that came back idle after a power cycle never stays idle) and the answer is
#: due within :data:`CHECK_DUE_MS` (never less than :data:`CHECK_DUE_WALL_MS` of wall time, a round trip).
#: Field updates that arrive while a check is out are held until its dump: a dump equal to the board with them
#: releases them; a different one, or none in time, means the link was lost meanwhile (a cable or a power cut
#: behind a USB serial adapter, the port kept open): what was held is dropped, the board is set up again and
#: its move memory read (the changes come back from there, in their order).
CHECK_EVERY_MS = 1000
#: A check's dump that differs from the board with its updates may be one scan misread (a square read wrong once):
#: it is counted (:attr:`DgtTranslator.bad_dumps`) and the dump asked for again, the updates still held; only this
#: many in a row mean the link was lost.
BAD_DUMPS_LOST = 2
CHECK_DUE_MS = 1000
CHECK_DUE_WALL_MS = 1000
CHECK = bytes((SEND_BRD, SEND_UPDATE_NICE))
#: The time between two fields' samples in one scan (ms): 64 fields in 200-250 ms.
SCAN_STEP_MS = 4
#: Sent when a lost link answers again: its move memory, the board, the clock, update mode.
RELINK = bytes((SEND_EE_MOVES, SEND_BRD, SEND_CLK, SEND_UPDATE_NICE))
#: How long (ms of board time, never less than 20 s of wall time: 8 kB at 9600 baud) the move memory is
#: waited for after :data:`RELINK`; then the board's dump is diffed alone.
EE_WAIT_MS = 20_000
#: The clock set up with White on the other side (its sides and turn bits swapped) is taken so once this many
#: presses, and more than not, came from the side that had not just moved.
CLOCK_SWAP_VOTES = 2
#: A clock press is told this long (ms) after it arrives: the placement before it may still be in the scan.
CLOCK_AFTER_SCAN_MS = 300
#: A press reaches the board up to this long (ms) after it was made: the board reads the clock about once a
#: second. Told with the press (``late_ms``), the engine takes it for the ply's time, never as which move it ends.
CLOCK_READ_MS = 1000

# -- EEPROM log ---------------------------------------------------------------------------------------------------
EE_POWERUP = 0x6A
EE_EOF = 0x6B
EE_FOURROWS = 0x6C
EE_EMPTYBOARD = 0x6D
EE_DOWNLOADED = 0x6E
EE_BEGINPOS = 0x6F
EE_BEGINPOS_ROT = 0x7A
EE_NOP = 0x7F
EE_NOP2 = 0x00

#: Piece codes to contents (FEN letters; 13-15 the result pieces).
CODES: dict[int, Content] = {0: None, **{i + 1: c for i, c in enumerate("PRNBKQprnbkq")},
                             13: "1/2-1/2", 14: "1-0", 15: "0-1"}
CONTENT_CODES = {c: code for code, c in CODES.items()}


def to_square(field_no: int) -> int:
    """Return the python-chess square (a1 = 0) of a DGT field number (a8 = 0)."""
    return field_no ^ 56


def header(msg_id: int, size: int) -> bytes:
    """Return a message header: the id and the total size in two 7-bit bytes."""
    return bytes((msg_id, (size >> 7) & 0x7F, size & 0x7F))


def message(msg_id: int, payload: bytes) -> bytes:
    """Return a whole message (header and payload)."""
    return header(msg_id, HEADER + len(payload)) + payload


def bcd(value: int) -> int:
    """Return the BCD byte of 0..99."""
    return ((value // 10) << 4) | (value % 10)


def from_bcd(byte: int) -> int:
    """Return the value of a BCD byte, or raise :class:`ProtocolError`."""
    hi, lo = byte >> 4, byte & 0x0F
    if hi > 9 or lo > 9:
        raise ProtocolError(f"clock digit not BCD: {byte:#04x}")
    return hi * 10 + lo


@dataclass(frozen=True)
class Frame:
    """One message from the board: its id and payload."""

    msg_id: int
    payload: bytes


@dataclass
class FrameDecoder:
    """Cuts the board's byte stream into :class:`Frame` objects by each message's header (its length).

    A message of a published id must have one of the sizes DGT published for it; one of an id not published
    here is *well framed* when its length is sane and its bytes all have the top bit clear: it is skipped and
    counted (:attr:`unknown`, by id), never an error. What is not a frame is a :class:`ProtocolError` in the
    output (and skipped: the decoder resynchronises on the next byte with the top bit set)."""

    buf: bytearray = field(default_factory=bytearray)
    unknown: dict[int, int] = field(default_factory=dict)    # well-framed messages of unknown ids skipped

    def feed(self, data: bytes) -> list[Frame | ProtocolError]:
        """Return the frames (and errors) completed by ``data``."""
        self.buf += data
        out: list[Frame | ProtocolError] = []
        while self.buf:
            start = 0
            while start < len(self.buf) and not self.buf[start] & MESSAGE_BIT:
                start += 1
            if start:
                out.append(ProtocolError(f"{start} byte(s) of garbage outside a message skipped"))
                del self.buf[:start]
                continue
            if len(self.buf) < HEADER:
                break
            msg_id = self.buf[0]
            if self.buf[1] & MESSAGE_BIT or self.buf[2] & MESSAGE_BIT:
                out.append(ProtocolError(f"message {msg_id:#04x} truncated in its header"))
                del self.buf[:1]
                continue
            size = (self.buf[1] << 7) | self.buf[2]
            sizes = FIXED_SIZES.get(msg_id)
            limit = VARIABLE.get(msg_id)
            known = sizes is not None or limit is not None
            if sizes is not None:
                fits = size in sizes
            else:
                fits = HEADER <= size <= (limit if limit is not None else UNKNOWN_LIMIT)
            if not fits:
                what = "a wrong length" if known else "an unbelievable length"
                out.append(ProtocolError(f"message {msg_id:#04x} with {what} {size} skipped"))
                del self.buf[:1]
                continue
            body = self.buf[HEADER:size]
            cut = next((i for i, b in enumerate(body) if b & MESSAGE_BIT), None)
            if cut is not None:
                out.append(ProtocolError(f"message {msg_id:#04x} truncated after {HEADER + cut} of {size} bytes"))
                del self.buf[:HEADER + cut]
                continue
            if len(self.buf) < size:
                break
            if known:
                out.append(Frame(msg_id, bytes(body)))
            else:
                self.unknown[msg_id] = self.unknown.get(msg_id, 0) + 1
            del self.buf[:size]
        return out


@dataclass(frozen=True)
class ClockReading:
    """A clock message: both sides' times (ms; bytes 3-5 white, 6-8 black) and whose turn it is."""

    white_ms: int
    black_ms: int
    turn: str | None          # "white", "black" or None (not said)
    running: bool
    connected: bool


def parse_clock(payload: bytes) -> ClockReading | None:
    """Return the clock reading of a BWTIME payload, None for a clock acknowledgement; raise
    :class:`ProtocolError` for digits out of range."""
    if len(payload) != 7:
        raise ProtocolError("clock message of a wrong length")
    if payload[0] & 0x0F == 0x0A or payload[3] & 0x0F == 0x0A:
        return None

    def side(b: bytes) -> int:
        hours = b[0] & 0x0F
        minutes, seconds = from_bcd(b[1]), from_bcd(b[2])
        if hours > 9 or minutes > 59 or seconds > 59:
            raise ProtocolError("clock time out of range")
        return ((hours * 60 + minutes) * 60 + seconds) * 1000

    status = payload[6]
    turn = "black" if status & 0x08 else "white" if status & 0x10 else None
    return ClockReading(side(payload[0:3]), side(payload[3:6]), turn, bool(status & 0x01), not status & 0x20)


def clock_payload(white_ms: int, black_ms: int, turn: str | None, running: bool = True) -> bytes:
    """Return a BWTIME payload (the emulator's; the inverse of :func:`parse_clock`)."""
    def side(ms: int) -> bytes:
        s = max(0, ms) // 1000
        return bytes((min(9, s // 3600), bcd(s // 60 % 60), bcd(s % 60)))

    status = (0x01 if running else 0) | (0x08 if turn == "black" else 0) | (0x10 if turn == "white" else 0)
    return side(white_ms) + side(black_ms) + bytes((status,))


def parse_ee(payload: bytes) -> list[tuple[str, int, int]]:
    """Return the EEPROM log's events in order: ``("field", field_no, code)``, ``("tag", code, 0)`` and
    ``("time", left, ms)``; bytes that are none of these are skipped."""
    out: list[tuple[str, int, int]] = []
    i = 0
    while i < len(payload):
        b = payload[i]
        if 0x40 <= b <= 0x5F and i + 1 < len(payload):
            out.append(("field", payload[i + 1] & 0x3F, b & 0x0F))
            i += 2
        elif (0x60 <= b <= 0x69 or 0x70 <= b <= 0x79) and i + 2 < len(payload):
            try:
                ms = ((b & 0x0F) * 3600 + from_bcd(payload[i + 1]) * 60 + from_bcd(payload[i + 2])) * 1000
                out.append(("time", int(bool(b & 0x10)), ms))
            except ProtocolError:
                pass
            i += 3
        else:
            if b in (EE_POWERUP, EE_EOF, EE_FOURROWS, EE_EMPTYBOARD, EE_DOWNLOADED, EE_BEGINPOS, EE_BEGINPOS_ROT):
                out.append(("tag", b, 0))
            i += 1
    return out


#: A change the move memory holds: ``(field, code)``, or the whole board (64 codes) a power-up found.
Change = tuple[int, int] | list[int]


def recover(at_download: list[int], host_last: list[int], events: list[tuple[str, int, int]],
            seen: int | None = None) -> list[Change]:
    """Return the field changes (field, code) made after the host last saw the board.

    ``events`` is the EEPROM log; the changes after its last ``EE_DOWNLOADED`` tag started from ``at_download`` (the
    board the host read after that download). A power-up in them (``EE_POWERUP`` and a field message for each piece
    found, in no order) is the board found then, a list of 64 codes: what was made while the board was off is not in
    the log. Nothing marks where its pieces end: a piece put down on an empty square just after it (a queen put on
    a3 before she is lifted from d6) is read as found, a board the engine then searches (a snapshot). The host saw
    them up to some point, ``host_last``. ``seen``: how many of the log's entries the host was told live since the
    download (counted as the log keeps them: :class:`Memory`); the board after that many is ``host_last`` unless the
    log and the host disagree, and then the changes after it are the ones missed. A position repeated while the link
    was lost (Rc2 Kc6 Rc1 Kd6, and again) is the board the host saw last more than once, which only the count tells
    apart. Else (no count, or a board that disagrees with it): the changes after the latest state equal to
    ``host_last`` (else the nearest, fewest squares off).
    """
    marks = [i for i, e in enumerate(events) if e == ("tag", EE_DOWNLOADED, 0)]
    tail = events[(marks[-1] + 1) if marks else 0:]
    changes: list[Change] = []
    i = 0
    while i < len(tail):
        kind, a, b = tail[i]
        i += 1
        if kind == "tag" and a == EE_POWERUP:
            found: dict[int, int] = {}
            while i < len(tail) and tail[i][0] == "field" and tail[i][2] and tail[i][1] not in found:
                found[tail[i][1]] = tail[i][2]
                i += 1
            changes.append([found.get(f, 0) for f in range(64)])
        elif kind == "field":
            changes.append((a, b))
    state = list(at_download)
    best, best_k = sum(x != y for x, y in zip(state, host_last, strict=True)), 0
    best_state = list(state)
    counted: list[int] | None = list(state) if seen == 0 else None
    for k, change in enumerate(changes, start=1):
        for field_no, code in _as_fields(state, change):
            state[field_no] = code
        off = sum(x != y for x, y in zip(state, host_last, strict=True))
        if off <= best:
            best, best_k, best_state = off, k, list(state)
        if k == seen:
            counted = list(state)
    if counted is not None and seen is not None and counted == host_last:
        return changes[seen:]
    # The change that led there wrote a square the host has otherwise: the host saw an earlier value the memory
    # overwrote (consecutive changes of one square are one entry: a pawn landing on f5 and then taken there,
    # p then P), never this one: it is replayed too.
    while best_k > 0:
        last = changes[best_k - 1]
        if isinstance(last, list) or best_state[last[0]] == host_last[last[0]]:
            break
        best_k -= 1
    return changes[best_k:]


def reaches(code: int, from_field: int, to_field: int, rotated: bool = False) -> bool:
    """Return whether the piece of ``code`` can go from ``from_field`` to ``to_field`` in one move on an empty board
    (a pawn forward, or diagonally forward one square; castling not counted); ``rotated``: the board is set up
    with White on the 8th rank side (its fields numbered the other way round)."""
    content = CODES.get(code)
    if content is None or content in RESULTS:
        return False
    piece = chess.Piece.from_symbol(content)
    origin, target = to_square(from_field), to_square(to_field)
    if rotated:
        origin, target = 63 - origin, 63 - target
    if piece.piece_type != chess.PAWN:
        board = chess.Board(None)
        board.set_piece_at(origin, piece)
        return bool(board.attacks_mask(origin) & chess.BB_SQUARES[target])
    forward = 1 if piece.color == chess.WHITE else -1
    files = abs(chess.square_file(target) - chess.square_file(origin))
    ranks = (chess.square_rank(target) - chess.square_rank(origin)) * forward
    home = chess.square_rank(origin) == (1 if piece.color == chess.WHITE else 6)
    return (files == 1 and ranks == 1) or (files == 0 and (ranks == 1 or (ranks == 2 and home)))


def scan_runs(codes: list[int], changes: list[Change], rotated: bool = False) -> list[list[Change]]:
    """Return ``changes`` (the move memory's, in its order, made from the board ``codes``) cut into runs whose
    order the memory cannot vouch for.

    The board writes the changes one scan finds in the order it samples its fields (a8 first), not in the order
    the hand made them. A piece put down where the piece lifted just before cannot have gone from there (the
    memory merges consecutive changes of one square: the landing may be the last of several), then the same
    piece lifted from a field from which it can: one move, its lift logged last (bxc3 after ...bxc3 e.p., logged
    c3 P then b2 empty: b2 comes later in the scan; or an earlier field the scan had passed just before the lift:
    ...Rxd1 slid d8-d3, logged d3 r then d8 empty). Those two are one run; every other change, and a power-up's board,
    is a run of its own (a hand lifts before it puts down; a piece lifted after a landing is the next move begun,
    or its victim). ``rotated``: as :func:`reaches` has it."""
    board = list(codes)
    runs: list[list[Change]] = []
    told: list[tuple[int, int, int]] = []        # the changes so far: field, code, the code there before
    for change in changes:
        if isinstance(change, list):
            runs.append([change])
            board = list(change)
            told.clear()
            continue
        field_no, code = change
        if told and not code and len(runs[-1]) == 1 and _lift_logged_late(told, field_no, board[field_no], rotated):
            runs[-1].append(change)
        else:
            runs.append([change])
        told.append((field_no, code, board[field_no]))
        board[field_no] = code
    return _castlings_joined(codes, runs)


def _as_fields(board: list[int], change: Change) -> list[tuple[int, int]]:
    """Return ``change`` made from ``board`` as field changes (field, code): a power-up's board as the fields it
    differs in."""
    if isinstance(change, list):
        return [(f, change[f]) for f in range(64) if change[f] != board[f]]
    return [change]


def _castlings_joined(codes: list[int], runs: list[list[Change]]) -> list[list[Change]]:
    """Return ``runs`` (from the board ``codes``) with the runs of a castling's four changes, logged one after
    another, joined into one: a scan reads a king and its rook on one rank within a few fields, so the order they
    come in may be the scan's, not the hand's (a rook logged lifted before its king may have been lifted after)."""
    board = list(codes)
    out: list[list[Change]] = []
    k = 0
    while k < len(runs):
        for size in (2, 3, 4):
            group = runs[k:k + size]
            changes = [c for run in group for c in run]
            if len(group) == size and len(changes) == 4 and _castling(board, changes):
                out.append(changes)
                break
        else:
            group = runs[k:k + 1]
            out.append(runs[k])
        for field_no, code in (f for run in group for change in run for f in _as_fields(board, change)):
            board[field_no] = code
        k += len(group)
    return out


def _castling(board: list[int], changes: list[Change]) -> bool:
    """Return whether ``changes`` (made from ``board``) are a castling's: a king and a rook of one side lifted from
    one rank, the king put down two files from its square, the rook on the square the king crossed."""
    if any(isinstance(c, list) for c in changes):
        return False
    lifts = [c for c in changes if isinstance(c, tuple) and not c[1]]
    puts = [c for c in changes if isinstance(c, tuple) and c[1]]
    if len(lifts) != 2 or len(puts) != 2:
        return False
    pieces = {CODES.get(board[f]): f for f, _ in lifts}
    for king, rook in (("K", "R"), ("k", "r")):
        if set(pieces) != {king, rook}:
            continue
        king_from, rook_from = pieces[king], pieces[rook]
        landed = {CODES.get(code): f for f, code in puts}
        king_to, rook_to = landed.get(king), landed.get(rook)
        if king_to is None or rook_to is None or len({king_from // 8, rook_from // 8, king_to // 8,
                                                      rook_to // 8}) != 1:
            return False
        return abs(king_to - king_from) == 2 and rook_to == (king_from + king_to) // 2
    return False


def _lift_logged_late(told: list[tuple[int, int, int]], field_no: int, piece: int, rotated: bool) -> bool:
    """Return whether ``piece`` lifted from ``field_no`` after the changes ``told`` (field, code, the code before)
    may be the lift of the landing told last, logged after it by the scan (:func:`scan_runs`)."""
    landing, placed, _ = told[-1]
    if not placed or placed != piece or not reaches(piece, field_no, landing, rotated):
        return False
    if len(told) > 1:
        lifted, code, was = told[-2]
        if not code and was == piece and reaches(piece, lifted, landing, rotated):
            return False            # the landing of the piece lifted just before: a whole move, in its order
    return True


def replay_times(codes: list[int], changes: list[Change], since: int, until: int,
                 rotated: bool = False, landed: Change | None = None) -> list[tuple[int, list[Change]]]:
    """Return the runs (:func:`scan_runs`) of ``changes`` (the move memory's, made from the board ``codes`` at
    unknown times between ``since`` and ``until``), each with the time to replay it: spread over that time, a rest
    between two runs, none within one (its order is the scan's, not the hand's), and none before a piece moving on
    from where it landed (:func:`_moving_on`; ``landed``: the change told live last, at ``since``), nor before the
    lift, logged after it, of the square that landing's piece came from: the memory keeps no times, so nothing says
    the piece was released there (4.7), nor that the board stood with both squares full."""
    runs = scan_runs(codes, changes, rotated)
    slots: list[int] = []                  # each run's rest slot: a piece moving on shares its landing's
    before: list[Change] | None = None if landed is None else [landed]
    board = list(codes)                    # the board before runs[k]
    k = 0
    while k < len(runs):
        step = 0 if before is None else _moving_on(before, board, runs[k:k + 2], rotated)
        if not step and not k and landed is not None and _landing_lift(landed, board, runs[0], rotated):
            step = 1         # the lift of the landing told live last, logged after it (a piece slid onto its square)
        if step:
            slots += [slots[-1] if slots else 0] * step
        else:
            step = 1
            slots.append(slots[-1] + 1 if slots else 1)
        before = []
        for change in (c for run in runs[k:k + step] for c in run):
            fields = _as_fields(board, change)
            before += fields
            for field_no, code in fields:
                board[field_no] = code
        k += step
    count = max(slots, default=0)
    return [(since + (until - since) * slot // (count + 1), run) for slot, run in zip(slots, runs, strict=True)]


def _landing_lift(landed: Change, board: list[int], run: list[Change], rotated: bool) -> bool:
    """Return whether ``run`` (from ``board``) is the lift of the piece ``landed`` put down, from a field it can
    come from (alone, or all a power-up's board differs in): that landing's move, its lift logged after it."""
    if len(run) == 1:
        run = [*_as_fields(board, run[0])]
    lift = run[0] if run else None
    if len(run) != 1 or lift is None or isinstance(lift, list) or isinstance(landed, list) or lift[1]:
        return False
    return _lift_logged_late([(landed[0], landed[1], 0)], lift[0], board[lift[0]], rotated)


def _moving_on(landing: list[Change], board: list[int], runs: list[list[Change]], rotated: bool) -> int:
    """Return how many of ``runs`` (the next two, from ``board``) move on the piece the run ``landing`` put down
    last, 0 when they do not: its square emptied and the same piece put down where it can go from there, in one
    run (the lift logged late, or a power-up's board that differs in those two squares only) or in two of one
    change each, in either order (a piece slid over squares, or lifted again: the memory cannot tell which; the
    scan may read the square it goes on first), or that run put it down on two squares at once (a power-up's
    board read it on both as it slid) and the next empties the one it left."""
    last = next((c for c in reversed(landing) if not isinstance(c, list) and c[1]), None)
    if last is None:
        return 0
    square, piece = last
    if runs and isinstance(runs[0][0], list):
        found: list[Change] = [*_as_fields(board, runs[0][0])]
        runs = [found]

    def onward(change: Change) -> bool:
        return (not isinstance(change, list) and change[1] == piece and change[0] != square
                and reaches(piece, square, change[0], rotated))

    first = runs[0] if runs else []
    if len(first) == 2 and (square, 0) in first and any(onward(c) for c in first):
        return 1
    put = [c for c in landing if not isinstance(c, list) and c[1] == piece]
    if len(first) == 1 and not isinstance(first[0], list) and not first[0][1] and (first[0][0], piece) in put and any(
            c[0] != first[0][0] and reaches(piece, first[0][0], c[0], rotated) for c in put):
        return 1            # sensed on two squares at once as it slid, the one it left emptied
    if len(runs) == 2 and len(runs[1]) == 1 and ((first == [(square, 0)] and onward(runs[1][0]))
                                                 or (len(first) == 1 and onward(first[0])
                                                     and runs[1] == [(square, 0)])):
        return 2
    return 0


@dataclass
class Memory:
    """What the host knows of one DGT board across reconnections (by serial number)."""

    at_download: list[int] | None = None   # the board read right after the last EEPROM download
    last: list[int] | None = None          # the board as last reported
    last_t: int = 0                        # the time of the last record told
    # the field changes told live since that download, counted as the move memory logs them (consecutive
    # changes of one field are one entry): where in the log the host stopped seeing the board
    seen: int = 0
    seen_field: int | None = None
    last_change: Change | None = None      # the last field change told live: (field, code)

    def downloaded(self, codes: list[int]) -> None:
        """Note the board read right after an EEPROM download: the count of changes seen starts again."""
        self.at_download = list(codes)
        self.seen, self.seen_field, self.last_change = 0, None, None

    def told(self, field_no: int, code: int) -> None:
        """Count one field change told live (the log's entry for it, unless it changes the same field again)."""
        if field_no != self.seen_field:
            self.seen += 1
        self.seen_field = field_no
        self.last_change = (field_no, code)


#: Per serial number, for the life of the bridge process.
MEMORIES: dict[str, Memory] = {}


class DgtTranslator(Translator):
    """A DGT board on a serial port (see the module)."""

    baudrate = 9600
    name = "dgt"
    min_settle_ms = MIN_SETTLE_MS

    def __init__(self, port: str, rate: float = 1.0) -> None:
        super().__init__(port, rate)
        self.decoder = FrameDecoder()
        self.raw = [0] * 64                  # piece codes as the board numbers its fields
        self.serial: str | None = None
        self.version: str | None = None
        self.ee_events: list[tuple[str, int, int]] | None = None
        self.dumps_wanted = 0                # board dumps asked for that the bridge wants as a snapshot
        self.turn: str | None = None
        self.clock_due: list[tuple[int, dict[str, Any]]] = []   # presses waiting for the scan (due, line)
        self.late_presses = 0                # presses read after the opponent's reply (left out)
        self.clock_primed = False            # the clock has been read once (its turn then is no press)
        self.clock_votes = {True: 0, False: 0}   # presses whose side was the last mover's (True) or not
        self.recovered = 0                   # changes replayed from the EEPROM log
        self.told = [0] * 64                 # piece codes as told to the adapter (the host's view)
        self.check_due: int | None = None    # a check is out: its dump is due by then
        self.last_check = 0
        self.held: list[tuple[int, int, int]] = []   # field updates held while a check is out (field, code, t)
        self.relinking = False               # the link was lost: set up again when the board answers
        self.ee_due: int | None = None       # set up again: dumps before its move memory are not the board's
        self.links_lost = 0
        self.bad_dumps = 0                   # check dumps that differed from the board (each asked for again)
        self.bad_in_a_row = 0                # ... since the last dump that agreed

    def start(self, now: int) -> bytes:
        self.last_rx = now                   # the watch starts now
        return bytes((SEND_RESET, RETURN_SERIALNR))     # the rest once the board answers (:data:`SETUP`)

    def poll(self) -> bytes:
        return bytes((SEND_VERSION,))

    def resume(self) -> bytes:
        return b"" if self.relinking else bytes((SEND_BRD, SEND_UPDATE_NICE))

    def heard(self, now: int) -> list[dict[str, Any]]:
        lines = super().heard(now)
        if self.relinking:
            # the link lost answers again: set up again (it may have been switched off: idle), memory read
            self.relinking = False
            self.resyncing = True
            self.ee_due = now + int(max(EE_WAIT_MS, 20_000 * self.rate))
            self.outbox += RELINK
            log.info("%s on %s: the link answers again; the board set up again and its move memory read",
                     self.board, self.port)
        return lines

    def _link_lost(self, now: int, why: str) -> list[dict[str, Any]]:
        """Note the link lost (``why``); return the error line that says so."""
        self.check_due = None
        self.bad_in_a_row = 0
        self.held.clear()
        self.raw = list(self.told)
        if self.relinking:
            return []
        self.relinking = True
        self.links_lost += 1
        log.warning("%s on %s: %s: the link was lost; the board is set up again when it answers", self.board,
                    self.port, why)
        return [{"t": max(now, self.adapter.last_t), "type": "error",
                 "why": f"{why}: the link was lost; the board is set up again and its memory read"}]

    def _due(self, now: int, ms: int, wall_ms: int) -> int:
        return now + int(max(ms, wall_ms * self.rate))

    def command(self, cmd: dict[str, Any], now: int) -> bytes:
        kind = cmd.get("cmd")
        if kind == "hello":
            return b"" if self.board is not None else bytes((RETURN_SERIALNR,))
        if kind == "snapshot":
            self.dumps_wanted += 1
            return bytes((SEND_BRD,))
        return b""          # no LEDs on DGT's wooden boards

    def feed(self, data: bytes, now: int) -> list[dict[str, Any]]:
        lines: list[dict[str, Any]] = []
        items = self.decoder.feed(data)
        lines += self.skipped_unknown(sum(self.decoder.unknown.values()), now)
        for item in items:
            if isinstance(item, ProtocolError):
                lines.append(self.rejected(str(item), now))
                if self.adapter.synced and SEND_BRD not in self.outbox:
                    self.outbox.append(SEND_BRD)     # a change may be hidden in it: the dump is diffed
                continue
            lines += self.heard(now)
            try:
                lines += self._message(item, now)
            except ProtocolError as exc:
                lines.append(self.rejected(str(exc), now))
        return lines + self._clock_lines(now)

    def _message(self, frame: Frame, now: int) -> list[dict[str, Any]]:
        p = frame.payload
        if frame.msg_id == MSG_SERIALNR:
            serial = "".join(chr(b) for b in p[:5] if 0x20 < b < 0x7F)     # 8 or 12 bytes: the 5 digits
            if not serial:
                raise ProtocolError("serial number message without digits")
            self.serial = serial
            if self.board is not None:
                return []            # identified already (a second answer)
            self.outbox += SETUP
            return [self.hello(board_id("dgt", serial), now, serial=serial)]
        if frame.msg_id == MSG_VERSION:
            self.version = f"{p[0]}.{p[1]:02d}"
            return []
        if frame.msg_id == MSG_EE_MOVES:
            self.ee_events = parse_ee(p)
            return []
        if frame.msg_id == MSG_BOARD_DUMP:
            return self._dump(list(p), now)
        if frame.msg_id == MSG_FIELD_UPDATE:
            field_no, code = p[0], p[1]
            if field_no > 63 or code not in CODES:
                raise ProtocolError(f"field update out of range (field {field_no}, code {code})")
            self.raw[field_no] = code
            if not self.adapter.synced or self.resyncing or self.relinking:
                return []            # the dump that follows (or the move memory) tells it
            if self.check_due is not None:
                self.held.append((field_no, code, now))
                return []
            return self._tell(field_no, code, now)
        if frame.msg_id == MSG_BWTIME:
            return self._clock(p, now)
        return []

    def _tell(self, field_no: int, code: int, t: int) -> list[dict[str, Any]]:
        """Tell the adapter one field's change; return the records."""
        self.told[field_no] = code
        if self.serial:
            MEMORIES.setdefault(self.serial, Memory()).told(field_no, code)
        lines = self.adapter.square_report(to_square(field_no), CODES.get(code), t)
        self._remember()
        return lines

    def _checked(self, codes: list[int], now: int) -> list[dict[str, Any]] | None:
        """Take the dump that answers a check: the held updates told when it equals the board with them (None:
        the dump is also a snapshot the bridge asked for, handled as such); else the link was lost."""
        self.check_due = None
        if codes != self.raw:
            self.bad_in_a_row += 1
            if self.bad_in_a_row < BAD_DUMPS_LOST:
                # one dump may misread a square: counted, asked for again (updates still held, no snapshot)
                self.bad_dumps += 1
                log.info("%s on %s: the board's dump differs from its updates; asked for again", self.board,
                         self.port)
                self.check_due = self._due(now, CHECK_DUE_MS, CHECK_DUE_WALL_MS)
                self.outbox.append(SEND_BRD)
                return []
            lines = self._link_lost(now, f"the board's dump differs from its updates {BAD_DUMPS_LOST} times")
            return lines + self.heard(now)      # it answers: set up again now
        self.bad_in_a_row = 0
        out: list[dict[str, Any]] = []
        for field_no, code, t in self.held:
            out += self._tell(field_no, code, t)
        self.held.clear()
        return out if self.dumps_wanted == 0 else None

    def _dump(self, codes: list[int], now: int) -> list[dict[str, Any]]:
        if any(c not in CODES for c in codes):
            raise ProtocolError("board dump with an unknown piece code")
        out: list[dict[str, Any]] = []
        if self.ee_due is not None:
            if self.ee_events is None and now < self.ee_due:
                return []          # asked for before the link was lost: the one after the memory is the board
            self.ee_due = None
        elif self.check_due is not None and self.adapter.synced and not self.resyncing:
            checked = self._checked(codes, now)
            if checked is not None:
                return checked
        memory = MEMORIES.get(self.serial) if self.serial else None
        if self.ee_events is not None and memory is not None and memory.at_download and memory.last:
            missed = recover(memory.at_download, memory.last, self.ee_events, memory.seen)
            since = min(memory.last_t, now)
            if missed and self.adapter.synced is False:
                # the adapter starts from what the host saw last, then replays the missed changes
                self.adapter.full_report(_contents(memory.last), since)
                self.adapter.shown = list(self.adapter.actual)
            if missed:
                log.info("%s: %d change(s) made while disconnected read from the board's memory", self.board,
                         len(missed))
                out.append({"t": now, "type": "error", "why": f"{len(missed)} change(s) read from the board's "
                            "memory (made while the port was closed)", "recovered": len(missed)})
            for t, run in replay_times(memory.last, missed, since, now, self.adapter.rotated,
                                        memory.last_change):
                # made at unknown times while the port was closed: spread over that time, in their order
                self.recovered += len(run)
                out += self._replay_run(run, t)
        if self.ee_events is not None and self.serial:
            MEMORIES.setdefault(self.serial, Memory()).downloaded(codes)
            self.ee_events = None
        self.raw = list(codes)
        self.told = list(codes)
        self.resyncing = False
        self.held.clear()
        self.check_due = None
        snapshot = self.dumps_wanted > 0
        self.dumps_wanted = max(0, self.dumps_wanted - 1)
        out += self.adapter.full_report(_contents(codes), now, snapshot=snapshot)
        self._remember()
        return out

    def _replay_run(self, run: list[Change], t: int) -> list[dict[str, Any]]:
        """Tell the adapter one run of the move memory's changes (:func:`scan_runs`) from ``t`` on; return the
        records.

        A power-up's board is diffed (what was made while the board was off). The changes one scan may have read
        are told :data:`SCAN_STEP_MS` apart, no rest between them, in an order a hand could have made them: the
        squares emptied first, then the squares filled (a pawn lifted from b2 before it lands on c3, which the scan
        read first)."""
        first = run[0]
        if isinstance(first, list):
            self.told = list(first)
            return self.adapter.full_report(_contents(first), t)
        changes = [c for c in run if isinstance(c, tuple)]
        out: list[dict[str, Any]] = []
        ordered = [c for c in changes if not c[1]] + [c for c in changes if c[1]]
        for k, (field_no, code) in enumerate(ordered):
            self.told[field_no] = code
            out += self.adapter.square_report(to_square(field_no), CODES.get(code), t + SCAN_STEP_MS * k)
        return out

    def _remember(self) -> None:
        if self.serial:
            memory = MEMORIES.setdefault(self.serial, Memory())
            memory.last = list(self.told)
            memory.last_t = max(memory.last_t, self.adapter.last_t)

    def _clock(self, payload: bytes, now: int) -> list[dict[str, Any]]:
        reading = parse_clock(payload)
        if reading is None or not reading.connected:
            return []
        before, self.turn = self.turn, reading.turn
        primed, self.clock_primed = self.clock_primed, True
        if not primed or before == reading.turn or not self.adapter.synced:
            return []           # the first reading (asked for at the start) is no press
        side = "white" if reading.turn == "black" else "black"
        if self.adapter.last_mover is not None:
            # which way round the clock is set up: the side that pressed is the side that moved last
            self.clock_votes[self.adapter.last_mover == side] += 1
        swapped = self.clock_votes[False] >= CLOCK_SWAP_VOTES and self.clock_votes[False] > self.clock_votes[True]
        if swapped:
            side = "black" if side == "white" else "white"
        remaining = reading.white_ms if (side == "white") != swapped else reading.black_ms
        self.clock_due.append((now + CLOCK_AFTER_SCAN_MS, {"type": "clock", "side": side, "remaining": remaining,
                                                           "late_ms": CLOCK_READ_MS + CLOCK_AFTER_SCAN_MS}))
        return []

    def _clock_lines(self, now: int) -> list[dict[str, Any]]:
        """Return the clock presses whose wait is over (a scan's reports that came after them go first)."""
        out = []
        while self.clock_due and self.clock_due[0][0] <= now:
            _, line = self.clock_due.pop(0)
            if self.adapter.last_mover not in (None, line["side"]):
                # the opponent has moved since this press (the clock is read up to 1 s late): told now, the
                # press would stand after the reply; left out (its time is lost, never a move)
                self.late_presses += 1
                log.debug("%s: a %s clock press read after the reply, left out", self.board, line["side"])
                continue
            out.append({"t": max(now, self.adapter.last_t), **line})
        return out

    def tick(self, now: int) -> tuple[list[dict[str, Any]], bytes]:
        lines, out = super().tick(now)
        if self.ee_due is not None and now >= self.ee_due:
            self.ee_due = None                   # the memory never came: the board's dump is diffed alone
            out += bytes((SEND_BRD,))
        if self.board is not None and self.adapter.synced and self.ee_due is None:
            if self.check_due is not None and now > self.check_due:
                if self.decoder.buf:
                    self.check_due = self._due(now, CHECK_DUE_MS, CHECK_DUE_WALL_MS)   # a long message coming
                else:
                    lines += self._link_lost(now, "no answer to the board check")
            if self.check_due is None and now - self.last_check >= CHECK_EVERY_MS and not self.resyncing:
                self.last_check = now
                if not self.relinking:
                    self.check_due = self._due(now, CHECK_DUE_MS, CHECK_DUE_WALL_MS)
                out += CHECK                     # while relinking: anything it answers says it is back
        return lines + self._clock_lines(now), out


def _contents(codes: list[int]) -> list[Content]:
    """Return the contents in python-chess square order (a1 = 0) of a dump in DGT field order."""
    out: list[Content] = [None] * 64
    for field_no, code in enumerate(codes):
        out[to_square(field_no)] = CODES.get(code)
    return out


__all__ = ["RESULTS", "DgtTranslator", "Frame", "FrameDecoder", "message"]
