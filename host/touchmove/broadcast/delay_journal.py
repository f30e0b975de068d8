"""The delay line on disk (``round-<n>-delay.jsonl``): every change of a delayed round's boards with its time,
so that a broadcaster killed (``kill -9``, a power cut after the page cache reached the disk) and started
again serves what was public before it, never less and never more, and the rest when it falls due.

One JSON object a line, appended as each change is recorded (flushed at once: a killed process loses none):

- ``{"clock": {"boot": B, "mono": M, "wall": W}}``: the clocks when the file was (re)written; the changes
  after it are timed on that monotonic clock;
- ``{"seen": T}``: the public view was served at ``T`` with a change newly shown (what was due then stays
  public after a reboot, whatever the wall clock says);
- ``{"t": T, "b": BOARD, "g": [GAME, ...]}``: board ``BOARD``'s games as they stood at monotonic time ``T``,
  each game ``{"n": number, "fen": start, "c960": bool, "k": K, "m": [[uci, clock_ms], ...], "r": result,
  "s": source, "why": reason, "f": first_move_ms, "a": added_ns}`` where the first ``K`` moves are those of
  the same game in the board's line before (only the moves after them are written).

Times come back on the current monotonic clock: as they are when the boot is the same (a restart of the
process), through the wall clock otherwise (a reboot: the only link), and then whatever was public at the
last change written stays public. A torn last line (a power cut) is ignored. The file is rewritten with only
what the delay still needs when the round opens and when it has grown (:data:`COMPACT_AFTER` lines).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any

import chess

from touchmove.broadcast.live_pgn import GameSnapshot, PlyRecord
from touchmove.broadcast.results import RESULTS
from touchmove.clocks import Clock
from touchmove.private_files import PRIVATE_MODE

log = logging.getLogger(__name__)

#: Changes appended before the file is rewritten with only what the delay still needs.
COMPACT_AFTER = 5000

Entry = tuple[float, tuple[GameSnapshot, ...]]


def delay_path(output_dir: Path, number: int) -> Path:
    return output_dir / f"round-{number}-delay.jsonl"


def _common_prefix(old: GameSnapshot | None, new: GameSnapshot) -> int:
    """How many of ``new``'s moves are ``old``'s first ones (0 when another game)."""
    if old is None or (old.number, old.start_fen, old.chess960) != (new.number, new.start_fen, new.chess960):
        return 0
    keep = min(len(old.moves), len(new.moves))
    if old.moves[:keep] == new.moves[:keep]:
        return keep
    k = 0
    while k < keep and old.moves[k] == new.moves[k]:
        k += 1
    return k


def encode(before: tuple[GameSnapshot, ...], games: tuple[GameSnapshot, ...]) -> list[dict[str, Any]]:
    """A board's games as a line stores them, each after the same game of ``before`` (its moves kept)."""
    out = []
    for i, game in enumerate(games):
        keep = _common_prefix(before[i] if i < len(before) else None, game)
        out.append({"n": game.number, "fen": game.start_fen, "c960": game.chess960, "k": keep,
                    "m": [[m.uci, m.clock_ms] for m in game.moves[keep:]], "r": game.result, "s": game.source,
                    "why": game.reason, "f": game.first_move_ms, "a": game.added_ns})
    return out


def decode(before: tuple[GameSnapshot, ...], raw: Any,
           positions: dict[int, chess.Board] | None = None) -> tuple[GameSnapshot, ...]:
    """The games a line stores (ValueError when it does not fit ``before`` or a move is illegal).
    ``positions``: each game's board after ``before``'s moves, taken back to the kept ones and played on (kept
    for the next line: reading a file is linear, not quadratic, in its moves)."""
    positions = {} if positions is None else positions
    if not isinstance(raw, list):
        raise ValueError("games must be a list")
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise ValueError("a game must be an object")
        number, fen, keep = item.get("n"), item.get("fen"), item.get("k")
        if not isinstance(fen, str) or type(keep) is not int or keep < 0 or item.get("r") not in RESULTS:
            raise ValueError("a game needs fen, k and a result")
        chess960 = item.get("c960") is True
        moves: list[PlyRecord] = []
        if keep:
            old = before[i] if i < len(before) else None
            if old is None or len(old.moves) < keep or old.start_fen != fen:
                raise ValueError("kept moves of a game not in the line before")
            moves = list(old.moves[:keep])
        board = positions.get(i)  # the position after before[i]'s moves (kept from the line before)
        if board is None or not keep or len(board.move_stack) < keep or board.chess960 != chess960:
            board = chess.Board(fen, chess960=chess960)
            for m in moves:
                board.push_uci(m.uci)
        while len(board.move_stack) > keep:
            board.pop()
        positions[i] = board
        for pair in item.get("m") or []:
            if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[0], str):
                raise ValueError("a move must be [uci, clock_ms]")
            move = chess.Move.from_uci(pair[0])
            if not board.is_legal(move):
                raise ValueError(f"illegal move {pair[0]}")
            moves.append(PlyRecord(pair[0], board.san(move), pair[1] if type(pair[1]) is int else None))
            board.push(move)
        source, reason, first, added = item.get("s"), item.get("why"), item.get("f"), item.get("a")
        out.append(GameSnapshot(fen, chess960, number if type(number) is int else None, tuple(moves),
                                str(item["r"]), source if isinstance(source, str) else None,
                                reason if isinstance(reason, str) else None,
                                first if type(first) is int else None, added if type(added) is int else 0))
    return tuple(out)


class DelayJournal:
    """The file of one delayed round's changes (see the module); :meth:`load` reads it, :meth:`rewrite`
    starts it again from the line kept in memory, :meth:`append` adds a change."""

    def __init__(self, path: Path, clock: Clock) -> None:
        self.path = path
        self.clock = clock
        self._fh: IO[str] | None = None
        self._last: dict[int, tuple[GameSnapshot, ...]] = {}
        self._appended = 0

    def load(self, delay: float) -> dict[int, list[Entry]]:
        """Each board's changes in the file, timed on the current monotonic clock (see the module); empty when
        there is no file."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            log.warning("%s cannot be read (%s): the delayed view starts again", self.path, exc)
            return {}
        now_mono, now_wall, boot = self.clock.monotonic(), self.clock.wall(), self.clock.boot_id()
        lines: dict[int, list[Entry]] = {}
        last: dict[int, tuple[GameSnapshot, ...]] = {}
        positions: dict[int, dict[int, chess.Board]] = {}
        session: list[tuple[int, int]] = []  # (board, index) of the entries of the current session
        header: dict[str, Any] | None = None
        alive = 0.0  # the latest moment the session is known to have run (its monotonic clock)

        def close_session() -> None:
            if header is None or not session:
                return
            same_boot = bool(boot) and header.get("boot") == boot
            if same_boot:
                return
            # another boot: through the wall clock, and what was public when it last ran stays public
            mono, wall = float(header["mono"]), float(header["wall"])
            for b, i in session:
                t, games = lines[b][i]
                moved = min(now_mono, now_mono - (now_wall - (wall + (t - mono))))
                if t + delay <= alive:
                    moved = min(moved, now_mono - delay)
                lines[b][i] = (moved, games)

        for number, raw in enumerate(text.splitlines(), start=1):
            try:
                item = json.loads(raw)
                if not isinstance(item, dict):
                    raise ValueError("not an object")
                if "clock" in item:
                    clock = item["clock"]
                    if not isinstance(clock, dict) or not all(isinstance(clock.get(k), (int, float))
                                                              for k in ("mono", "wall")):
                        raise ValueError("a clock needs mono and wall")
                    close_session()
                    header, session, alive = clock, [], float(clock["mono"])
                    continue
                if "seen" in item:
                    if not isinstance(item["seen"], (int, float)):
                        raise ValueError("seen must be a time")
                    alive = max(alive, float(item["seen"]))
                    continue
                t, board = item.get("t"), item.get("b")
                if header is None or not isinstance(t, (int, float)) or type(board) is not int:
                    raise ValueError("a change needs a clock line before it, t and b")
                games = decode(last.get(board, ()), item.get("g"), positions.setdefault(board, {}))
            except (ValueError, TypeError, KeyError) as exc:
                log.warning("%s line %d cannot be read (%s): the lines after it are ignored", self.path, number, exc)
                break
            last[board] = games
            lines.setdefault(board, []).append((float(t), games))
            session.append((board, len(lines[board]) - 1))
            alive = max(alive, float(t))
        close_session()
        return lines

    def rewrite(self, lines: Mapping[int, Iterable[Entry]]) -> None:
        """Start the file again with the clocks now and ``lines`` (what the delay still needs), then keep it
        open for :meth:`append`."""
        self.close()
        clock = {"boot": self.clock.boot_id(), "mono": self.clock.monotonic(), "wall": self.clock.wall()}
        parts = [json.dumps({"clock": clock}, separators=(",", ":"))]
        last: dict[int, tuple[GameSnapshot, ...]] = {}
        for board, entries in sorted(lines.items()):
            for t, games in entries:
                parts.append(self._line(last.get(board, ()), board, t, games))
                last[board] = games
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_MODE)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write("\n".join(parts) + "\n")
        os.replace(tmp, self.path)
        self._fh = open(self.path, "a", encoding="utf-8", newline="\n")  # noqa: SIM115 (kept open: appends)
        self._last = last
        self._appended = 0

    @staticmethod
    def _line(before: tuple[GameSnapshot, ...], board: int, t: float, games: tuple[GameSnapshot, ...]) -> str:
        return json.dumps({"t": t, "b": board, "g": encode(before, games)}, separators=(",", ":"))

    def append(self, board: int, t: float, games: tuple[GameSnapshot, ...]) -> None:
        """Add one change (written through at once: a killed process loses none)."""
        if self._fh is None:
            return
        try:
            self._fh.write(self._line(self._last.get(board, ()), board, t, games) + "\n")
            self._fh.flush()
        except OSError:
            log.exception("writing %s failed", self.path)
            return
        self._last[board] = games
        self._appended += 1

    def seen(self, t: float) -> None:
        """Note that the public view was served at monotonic time ``t`` (what was due then stays public, even
        after a reboot with the wall clock stepped back)."""
        if self._fh is None:
            return
        try:
            self._fh.write(json.dumps({"seen": t}) + "\n")
            self._fh.flush()
        except OSError:
            log.exception("writing %s failed", self.path)

    @property
    def needs_compaction(self) -> bool:
        return self._appended >= COMPACT_AFTER

    def close(self) -> None:
        if self._fh is not None:
            with contextlib.suppress(OSError):
                self._fh.close()
            self._fh = None
