"""An emulated vendor board on a pty, the real bridge (``touchmove run``) and a private Mosquitto."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import chess

from tests.e2e.helpers import Broker, Subscriber, exported_moves, journal_moves, start_daemon, unique_moves
from touchmove.sim import hands, timeline
from touchmove.sim.pieces import Event, piece_timeline
from touchmove.sim.ptyboard import PtyBoard

BOARD_IDS = {"dgt": "dgt-12345", "chesslink": "chesslink-ttyBOARD0", "chessnut": "chessnut-ttyBOARD0"}


def emulator_argv(protocol: str, path: Path, speed: int, start: chess.Board, extra: tuple[str, ...] = ()
                  ) -> list[str]:
    """Return the command line of ``protocol``'s emulator playing the timeline at ``path`` (``extra``: its
    options, e.g. ``--serial-size 8``)."""
    if protocol == "dgt":
        return [sys.executable, "-m", "touchmove.sim.dgt", str(path), "--speed", str(speed), "--start", start.fen(),
                *extra]
    return [sys.executable, "-m", "touchmove.sim.scanning", protocol, str(path), "--speed", str(speed),
            "--start", start.fen(), *extra]


class BoardRig:
    """One emulated board of ``protocol`` playing ``moves`` through the bridge (or the piece timeline
    ``events``)."""

    def __init__(self, tmp: Path, protocol: str, moves: list[chess.Move], *, speed: int = 5, seed: int = 1,
                 start: chess.Board | None = None, style: hands.Style | None = None,
                 events: list[Event] | None = None, start_board: bool = True,
                 emulator_options: tuple[str, ...] = ()) -> None:
        self.tmp, self.protocol = tmp, protocol
        self.start_board = start_board      # False: the caller starts ``board`` (its timeline) when ready
        self.start = start or chess.Board()
        self.board_id = BOARD_IDS[protocol]
        if events is None:
            events = piece_timeline(self.start, moves, random.Random(seed), style)
        self.last_t = max(e.t for e in events)
        path = timeline.write(tmp / "timeline.jsonl", events)
        self.broker = Broker(tmp)
        self.journal = tmp / "journal.sqlite3"
        self.config = tmp / "bridge.toml"
        self.config.write_text(
            f'[mqtt]\nurl = "mqtt://127.0.0.1:{self.broker.port}"\n\n[serial]\nrescan_s = 0.2\n'
            f'boards = [{{ port = "{tmp}/ttyBOARD*", protocol = "{protocol}", rate = {speed} }}]\n\n'
            f'[journal]\npath = "{self.journal}"\n')
        self.board = PtyBoard(emulator_argv(protocol, path, speed, self.start, emulator_options),
                              str(tmp / "ttyBOARD0"), stderr=None)
        self.daemon = None
        self.sub: Subscriber | None = None

    def __enter__(self) -> BoardRig:
        self.broker.start()
        self.sub = Subscriber(self.broker.port)
        self.daemon = start_daemon(self.config, self.tmp / "daemon.log")
        self.sub.wait_for(lambda: self.sub is not None and self.sub.last("touchmove/bridge/state") is not None,
                          20, "the bridge online")
        self.board.plug()
        if self.start_board:
            self.board.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.terminate()
            self.daemon.wait(10)
        self.board.stop()
        if self.sub is not None:
            self.sub.close()
        self.broker.stop()

    def events(self) -> list[dict[str, object]]:
        assert self.sub is not None
        return self.sub.events(self.board_id)

    def moves(self) -> list[str]:
        return unique_moves(self.events())  # type: ignore[arg-type]

    def alerts(self) -> list[str]:
        return [str(e.get("code")) for e in self.events() if e.get("type") == "alert"]

    def log(self) -> str:
        return (self.tmp / "daemon.log").read_text(errors="replace")

    def wait_game(self, want: list[str], timeout: float) -> None:
        assert self.sub is not None
        try:
            self.sub.wait_for(lambda: self.moves() == want, timeout, "the whole game on MQTT")
        except AssertionError:
            raise AssertionError(f"got  {self.moves()}\nwant {want}\nalerts {self.alerts()}\n"
                                 f"{self.log()[-3000:]}") from None

    def counts(self) -> dict[str, int]:
        """Plies published (MQTT), journaled and exported."""
        self.stop_daemon()
        (self.tmp / "export").mkdir(exist_ok=True)
        return {"published": len(self.moves()), "journaled": len(journal_moves(self.journal, self.board_id)),
                "exported": len(exported_moves(self.journal, self.board_id, self.tmp / "export"))}

    def stop_daemon(self) -> None:
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.terminate()
            self.daemon.wait(10)

