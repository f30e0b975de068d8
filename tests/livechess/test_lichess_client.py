"""lichess's own DGT client, unmodified, in headless Chromium, plays a whole game through touchmove's LiveChess-
compatible server against a stand-in of the lichess Board API: once on a simulated touchmove board (the firmware
under MicroPython, ``touchmove livechess`` beside ``touchmove run``) and once on an emulated DGT board (the
server inside ``touchmove run``, from ``[livechess]`` in bridge.toml).

The user is White. Each of White's moves made on the board reaches the stand-in as the client's POST; the
opponent's answer comes back on the game stream and is made on the board (the client takes it as a valid
adjustment). Black first touches the e-pawn and plays d7-d5 instead of lichess's e7-e5: the client says "Invalid
Adjustment" and touchmove raises its own touch-move alert (4.3.1) on MQTT; d5 is taken back on the board, e5
played, and the game goes on to mate (1.e4 e5 2.Bc4 Nc6 3.Qh5 Nf6 4.Qxf7#).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import chess
import pytest

from tests.e2e.helpers import Broker, Subscriber, free_port, start_daemon, write_config, write_timeline
from tests.e2e.rig import firmware_argv
from tests.livechess.lichess_client import BoardApi, Browser, bundle, require_client
from touchmove.sim import timeline
from touchmove.sim.pieces import Change
from touchmove.sim.ptyboard import PtyBoard

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
START = "ffff00000000ffff"
FW_BOARD = "fw-lichess"
DGT_BOARD = "dgt-12345"
#: The opponent's answer (lichess) to each of the user's moves; the last one mates.
REPLIES = {"e2e4": "e7e5", "f1c4": "b8c6", "d1h5": "g8f6"}
POSTS = ["e2e4", "f1c4", "d1h5", "h5f7"]
#: What happens on the board, (pause before it in ms, lift or place, square): the user's moves and the
#: opponent's answers, which wait for lichess; Black's first answer is a touch, a wrong move, and its takeback.
PLAY: list[tuple[int, str, str]] = [
    (3000, "lift", "e2"), (300, "place", "e4"),
    (3000, "lift", "e7"), (400, "place", "e7"),                     # the e-pawn touched...
    (600, "lift", "d7"), (300, "place", "d5"),                      # ...and d7-d5 played: not lichess's move
    (3000, "lift", "d5"), (300, "place", "d7"),                     # taken back
    (1500, "lift", "e7"), (300, "place", "e5"),
    (3000, "lift", "f1"), (300, "place", "c4"),
    (3000, "lift", "b8"), (300, "place", "c6"),
    (3000, "lift", "d1"), (300, "place", "h5"),
    (3000, "lift", "g8"), (300, "place", "f6"),
    (3000, "lift", "f7"), (300, "lift", "h5"), (300, "place", "f7"),
]


def timed_play() -> list[tuple[int, str, str]]:
    out, t = [], 0
    for pause, kind, sq in PLAY:
        t += pause
        out.append((t, kind, sq))
    return out


def firmware_records() -> list[dict[str, Any]]:
    """The play as the firmware's sensors see it (recording format), after a snapshot of the start position."""
    return [{"t": 0, "type": "snapshot", "occ": START}, *({"t": t, "type": kind, "sq": sq} for t, kind, sq in
                                                          timed_play())]


def dgt_changes() -> list[Change]:
    """The play as the DGT board's fields see it: a lifted piece goes into the hand, a place puts down the last
    one lifted (a capture's victim, lifted first, stays in the hand)."""
    board, hand, out = chess.Board(), [], []
    squares = {sq: board.piece_at(sq) for sq in chess.SQUARES}
    for t, kind, name in timed_play():
        sq = chess.parse_square(name)
        if kind == "lift":
            piece = squares[sq]
            assert piece is not None
            hand.append(piece)
            squares[sq] = None
            out.append(Change(t, sq, None))
        else:
            piece = hand.pop()
            squares[sq] = piece
            out.append(Change(t, sq, piece.symbol()))
    return out


class Game:
    """The processes of one run: Mosquitto, the bridge, the board, the LiveChess server, the stand-in, Chromium."""

    def __init__(self, tmp: Path, kind: str) -> None:
        self.tmp, self.kind = tmp, kind
        self.board_id = FW_BOARD if kind == "firmware" else DGT_BOARD
        self.broker = Broker(tmp)
        self.live_port = free_port()
        self.procs: list[subprocess.Popen[bytes]] = []
        self.sub: Subscriber | None = None
        link = str(tmp / "ttyBOARD0")
        journal = tmp / "journal.sqlite3"
        config = write_config(tmp / "bridge.toml", broker_port=self.broker.port, ports=[f"{tmp}/ttyBOARD*"],
                              journal=journal, settle_ms=200, rescan_s=0.2)
        if kind == "firmware":
            idle = write_timeline(tmp / "idle.jsonl", [{"t": 0, "type": "snapshot", "occ": START}])
            self.board = PtyBoard(firmware_argv(), link, env=self._fw_env(idle), stderr=None)
        else:
            text = config.read_text().replace(f'ports = ["{tmp}/ttyBOARD*"]\n',
                                              f'boards = [{{ port = "{tmp}/ttyBOARD*", protocol = "dgt" }}]\n')
            config.write_text(text + f"\n[livechess]\nport = {self.live_port}\n")
            idle = timeline.write(tmp / "idle.jsonl", [])
            self.board = PtyBoard(self._dgt_argv(idle), link, stderr=None)
        self.config = config

    def _fw_env(self, path: Path) -> dict[str, str]:
        return dict(os.environ, TOUCHMOVE_SIM=str(path), TOUCHMOVE_SIM_SPEED="1", TOUCHMOVE_SIM_EXIT="0",
                    TOUCHMOVE_BOARD=FW_BOARD)

    @staticmethod
    def _dgt_argv(path: Path) -> list[str]:
        return [sys.executable, "-m", "touchmove.sim.dgt", str(path), "--speed", "1"]

    @property
    def livechess_url(self) -> str:
        return f"ws://127.0.0.1:{self.live_port}/api/v1.0"

    def start(self) -> Subscriber:
        self.broker.start()
        self.sub = Subscriber(self.broker.port)
        self.procs.append(start_daemon(self.config, self.tmp / "daemon.log"))
        if self.kind == "firmware":
            out = open(self.tmp / "livechess.log", "ab")  # noqa: SIM115 - closed with the process
            self.procs.append(subprocess.Popen(
                [sys.executable, "-m", "touchmove.cli", "livechess", "--broker", self.broker.url, "--port",
                 str(self.live_port)], stdout=out, stderr=subprocess.STDOUT, cwd=REPO))
        self.sub.wait_for(lambda: self.sub is not None and self.sub.last("touchmove/bridge/state") is not None,
                          20, "the bridge online")
        self.board.plug()
        self.board.start()
        return self.sub

    def play(self) -> None:
        """Power the board on again, now with the game to play (its pieces stand as before). The DGT board's
        cable is pulled and put back too: the bridge sets a board's update mode once, when its port opens."""
        self.board.kill()
        if self.kind == "firmware":
            self.board.env = self._fw_env(write_timeline(self.tmp / "play.jsonl", firmware_records()))
        else:
            self.board.unplug()
            self.board.argv = self._dgt_argv(timeline.write(self.tmp / "play.jsonl", dgt_changes()))
            time.sleep(1.0)         # the bridge sees the port gone (it rescans every 0.2 s)
            self.board.plug()
        self.board.start()

    def events(self) -> list[dict[str, Any]]:
        assert self.sub is not None
        return self.sub.events(self.board_id)

    def logs(self) -> str:
        out = []
        for name in ("daemon.log", "livechess.log"):
            path = self.tmp / name
            if path.exists():
                out.append(f"--- {name}\n{path.read_text(errors='replace')[-4000:]}")
        return "\n".join(out)

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
        self.board.stop()
        if self.sub is not None:
            self.sub.close()
        self.broker.stop()


async def eventually(check: Any, timeout: float, what: str, game: Game, browser: Browser) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:g} s\n--- client log\n{(await browser.log())[-6000:]}"
                                 f"\n{game.logs()}")
        await asyncio.sleep(0.1)


async def lichess_game(tmp: Path, kind: str) -> None:
    bundled = bundle(tmp / "bundle")
    game = Game(tmp, kind)
    api = BoardApi(bundled, game.livechess_url, REPLIES)
    browser = Browser()
    try:
        game.start()
        await api.start()
        await browser.start()
        await browser.open(api.url)
        # The client attaches the game and sets the board up through the server: the bridge's next game.
        await eventually(lambda: any(e["type"] == "game_start" and e["game"] == 2 for e in game.events()), 90,
                         "the client's setup (game 2 on the board)", game, browser)
        played_from = time.monotonic()
        game.play()
        await eventually(lambda: [uci for uci, _ in api.posts] == POSTS, 120, f"the POSTs {POSTS}", game, browser)
        await eventually(lambda: browser.said("Invalid Adjustment"), 5, "the client's Invalid Adjustment",
                         game, browser)
        log = await browser.log()
    finally:
        await browser.stop()
        await api.stop()
        game.stop()
    alerts = [e for e in game.events() if e["type"] == "alert" and e["game"] == 2]
    assert any(a["code"] == "touch_move" and a["article"] == "4.3.1" for a in alerts), alerts
    moves = [e for e in game.events() if e["game"] == 2 and e["type"] in ("move", "takeback")]
    assert [e.get("san", "takeback") for e in moves] == ["e4", "d5", "takeback", "e5", "Bc4", "Nc6", "Qh5",
                                                         "Nf6", "Qxf7#"], moves
    assert "Expected:e7e5" in log and "Detected:d7d5" in log, log[-4000:]
    for answer in ("e5", "Nc6", "Nf6"):
        assert f"Valid Adjustment: {answer}" in log, log[-4000:]
    # Move by move: each POST came after the user's move was made on the board and before the next one was.
    made = [t / 1000 for t, kind, sq in timed_play() if kind == "place" and sq in ("e4", "c4", "h5", "f7")]
    posted = [at - played_from for _, at in api.posts]
    for i, at in enumerate(posted):
        assert at > made[i] and (i + 1 == len(made) or at < made[i + 1]), (posted, made)


@pytest.mark.parametrize("kind", ["firmware", "dgt"])
def test_lichess_s_client_plays_a_whole_game_on_the_board(tmp_path: Path, kind: str) -> None:
    require_client()
    if kind == "firmware":
        firmware_argv()         # skips (or fails under TOUCHMOVE_REQUIRE_ALL) without MicroPython
    asyncio.run(lichess_game(tmp_path, kind))
