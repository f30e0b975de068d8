"""The bridge's publisher: what the bridge says over MQTT, on which topic (:mod:`touchmove.mqtt.wire`).

Per board: ``events`` (offered in order by the event pipeline, acknowledged back to it), and the retained
``state``, ``pgn`` and ``availability``; for the bridge: the retained ``bridge/info`` and ``bridge/state`` (its
problems). Retained payloads are built when the link sends them (:meth:`BridgeLink.retain` takes a callable), so a
board whose state changes ten times between two sends is serialised once.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from typing import Any

import chess.pgn

from touchmove import __version__, records
from touchmove.bridge.mqtt_link import OFFLINE, ONLINE, BridgeLink, dumps
from touchmove.bridge.session import BoardSession
from touchmove.mqtt import wire
from touchmove.mqtt.wire import iso_now

#: The longest retained PGN read back (:func:`plies_in_pgn`): a game of the most plies a record takes, with headers.
MAX_PGN_BYTES = 64 * 1024


def plies_in_pgn(payload: bytes) -> tuple[str, ...] | None:
    """Return the plies (SAN) of the game in a board's retained PGN as :meth:`Publisher.pgn_text` writes it (read
    back after a restart), or None when it is no such game (not UTF-8, not PGN, an illegal move, too long)."""
    if len(payload) > MAX_PGN_BYTES:
        return None
    try:
        game = chess.pgn.read_game(io.StringIO(payload.decode("utf-8")))
    except (UnicodeDecodeError, ValueError):
        return None
    if game is None or game.errors:
        return None
    board = game.board()
    plies = tuple(board.san_and_push(move) for move in game.mainline_moves())
    return plies if len(plies) <= records.MAX_PUBLISHED_MOVES else None


class Publisher:
    """Topics and retained state of one bridge, on its MQTT link; the event pipeline's outlet."""

    def __init__(self, mqtt: BridgeLink, base: str, session: str, *, settle_ms: int,
                 boards: Mapping[str, BoardSession], problems: Callable[[], list[dict[str, Any]]]) -> None:
        self.mqtt = mqtt
        self.base = base
        self.session = session
        self.started = iso_now()
        self.settle_ms = settle_ms
        self._boards = boards
        self._problems = problems

    def topic(self, board: str, leaf: str) -> str:
        return wire.board_topic(self.base, board, leaf)

    # -- the event pipeline's outlet ----------------------------------------------------------------------
    def room(self) -> int:
        return self.mqtt.room()

    def offer_event(self, board: str, seq: int, body: bytes) -> None:
        self.mqtt.offer_event(self.topic(board, "events"), body, (board, seq))

    def board_changed(self, sess: BoardSession) -> None:
        self.publish_board_retained(sess)

    def bridge_state_changed(self) -> None:
        self.publish_bridge_state()

    # -- a board ------------------------------------------------------------------------------------------
    def state_payload(self, sess: BoardSession) -> dict[str, Any]:
        st = sess.engine.state()
        return {"board": sess.board, "game": st.game, "ply": st.ply, "fen": st.fen, "last_move": st.last_move,
                "in_sync": st.in_sync, "occupancy": records.format_occupancy(st.occupancy),
                "game_over": st.game_over, "session": self.session, "ts": iso_now()}

    @staticmethod
    def pgn_text(sess: BoardSession, game_index: int = -1) -> str:
        games = sess.engine.games
        if not games:
            return ""
        headers = {"Event": "touchmove", "Site": sess.board, **sess.headers}
        game = games[game_index].pgn(headers)
        out = io.StringIO()
        print(game, file=out, end="\n")
        return out.getvalue()

    def publish_board_retained(self, sess: BoardSession) -> None:
        self.mqtt.retain(self.topic(sess.board, "state"), lambda: dumps(self.state_payload(sess)))
        self.mqtt.retain(self.topic(sess.board, "pgn"), lambda: self.pgn_text(sess).encode())
        if sess.link is None and self.topic(sess.board, "availability") not in self.mqtt.retained_topics():
            self.mqtt.retain(self.topic(sess.board, "availability"), OFFLINE)

    def board_online(self, sess: BoardSession) -> None:
        """A board said hello on a port: ``online``, its retained state, the bridge's board list."""
        self.mqtt.retain(self.topic(sess.board, "availability"), ONLINE)
        self.publish_board_retained(sess)
        self.publish_info()

    def board_offline(self, board: str) -> None:
        """A board's port closed: ``offline``, and the bridge's board list."""
        self.mqtt.retain(self.topic(board, "availability"), OFFLINE)
        self.publish_info()

    # -- the bridge ---------------------------------------------------------------------------------------
    def info_payload(self) -> dict[str, Any]:
        return {"version": __version__, "session": self.session, "started": self.started,
                "settle_ms": self.settle_ms, "boards": sorted(self._boards)}

    def publish_info(self) -> None:
        self.mqtt.retain(wire.bridge_topic(self.base, "info"), lambda: dumps(self.info_payload()))

    def publish_bridge_state(self) -> None:
        problems = self._problems()
        payload: dict[str, Any] = {"state": "online"}
        if problems:
            payload["problems"] = problems
        self.mqtt.retain(wire.bridge_topic(self.base, "state"), dumps(payload))

    def connected(self) -> None:
        """The link (re)connected: the bridge's info, and its state when there are problems to tell."""
        self.publish_info()
        if self._problems():
            self.publish_bridge_state()

    def farewell(self) -> list[tuple[str, bytes]]:
        """Return the retained messages a bridge leaves at shutdown: every board and the bridge ``offline``."""
        final = [(self.topic(b, "availability"), OFFLINE) for b in self._boards]
        final.append((wire.bridge_topic(self.base, "state"), OFFLINE))
        return final
