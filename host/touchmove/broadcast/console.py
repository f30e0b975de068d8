"""What the arbiter's console needs beyond the game: the events kept for timelines, both clocks, when a board
last moved and since when it is out of sync, and the claim windows of the alerts.

The broadcaster owns one :class:`ConsoleState` and calls it from its message handling; nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from touchmove.broadcast.timeline import EventStore, claim_window, time_class


class GameLike(Protocol):
    start_fen: str

    @property
    def ply(self) -> int: ...


class AlertLike(Protocol):
    id: int
    board: int | None
    acked: bool
    window: dict[str, Any] | None

    def to_json(self) -> dict[str, Any]: ...


def both_clocks(start_fen: str, clocks: Iterable[int | None]) -> dict[str, int | None]:
    """Each side's clock (ms) at its latest press, from the plies' clock times in order."""
    fields = start_fen.split()
    white_first = len(fields) < 2 or fields[1] != "b"  # no board built: this runs for every update
    out: dict[str, int | None] = {"white": None, "black": None}
    for ply, ms in enumerate(clocks, start=1):
        if ms is not None:
            out["white" if (ply % 2 == 1) == white_first else "black"] = ms
    return out


class ConsoleState:
    """Per board: the events (for timelines), when it last moved, since when it is out of sync."""

    def __init__(self, time_control: str) -> None:
        self.timing = time_class(time_control)
        self.events = EventStore()
        self.moved_at: dict[int, str] = {}
        self.sync_since: dict[int, str] = {}
        #: alert id -> (board, game, the alert event as stored)
        self.alert_events: dict[int, tuple[int, int, Mapping[str, Any]]] = {}
        self._open: dict[int, list[AlertLike]] = {}

    def extras(self, board: int) -> dict[str, Any]:
        """Fields added to the board's JSON."""
        return {"moved_at": self.moved_at.get(board), "out_of_sync_since": self.sync_since.get(board)}

    def on_event(self, board: int, event: Mapping[str, Any]) -> bool:
        """Keep one event; whether it was new (not a redelivery, and of a game)."""
        kept = self.events.add(board, event) is not None
        kind = event.get("type")
        if kept and kind in ("move", "move_amended", "takeback", "game_start") and isinstance(event.get("ts"), str):
            self.moved_at[board] = str(event["ts"])
        return kept

    def on_sync(self, board: int, in_sync: bool | None, ts: str) -> None:
        if in_sync is False:
            self.sync_since.setdefault(board, ts)
        else:
            self.sync_since.pop(board, None)

    def on_alert(self, alert: AlertLike, event: Mapping[str, Any]) -> None:
        """A new alert: its claim window as of now (later events may close it: :meth:`closed_windows`)."""
        game = event.get("game")
        if alert.board is None or not isinstance(game, int):
            return
        record = self.events.game(alert.board, game)
        if record is None:
            return
        stored = next((e for e in reversed(record.events) if e.get("type") == "alert"
                       and e.get("seq") == event.get("seq") and e.get("code") == event.get("code")), None)
        if stored is None:
            return
        self.alert_events[alert.id] = (alert.board, game, stored)
        alert.window = claim_window(stored, record.events, white_starts=record.white_starts, timing=self.timing)
        if alert.window is not None and alert.window["open"]:
            self._open.setdefault(alert.board, []).append(alert)

    def closed_windows(self, board: int, event: Mapping[str, Any]) -> list[AlertLike]:
        """Alerts of ``board`` whose window this event closed (their ``window`` updated)."""
        waiting = self._open.get(board)
        if not waiting or event.get("type") not in ("touch", "move", "game_end"):
            return []
        closed = []
        for alert in list(waiting):
            board_no, game, stored = self.alert_events[alert.id]
            record = self.events.game(board_no, game)
            if record is None:
                waiting.remove(alert)
                continue
            window = claim_window(stored, record.events, white_starts=record.white_starts, timing=self.timing,
                                  game_over=any(e.get("type") == "game_end" for e in record.events[-3:]))
            if window is not None and not window["open"]:
                alert.window = window
                waiting.remove(alert)
                closed.append(alert)
        return closed
