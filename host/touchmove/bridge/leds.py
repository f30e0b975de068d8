"""What a board's LEDs show of its events: the last move's squares, the squares to correct after a mismatch,
cleared at a takeback, a new game or a board restored."""

from __future__ import annotations

from typing import Any

from touchmove.serial.commands import leds_command
from touchmove.serial.link import SerialLink

LED_LAST_MOVE = [0, 48, 0]
LED_CORRECT = [64, 0, 0]


def show_on_board(link: SerialLink, payload: dict[str, Any]) -> None:
    """Send ``link`` the LED commands for one event (most events show nothing)."""
    kind = payload["type"]
    if kind in ("move", "move_amended") and isinstance(payload.get("uci"), str):
        uci = payload["uci"]
        link.send({"cmd": "leds", "clear": True})
        link.send({"cmd": "leds", "squares": [uci[:2], uci[2:4]], "color": LED_LAST_MOVE})
    elif kind == "alert" and payload.get("code") == "board_mismatch":
        detail = payload.get("detail") or {}
        squares = [s for key in ("extra", "missing") for s in detail.get(key, []) if isinstance(s, str)]
        if squares:
            link.send(leds_command(squares, LED_CORRECT))
    elif kind in ("takeback", "game_start") or (
            kind == "alert" and payload.get("code") == "board_restored"):
        link.send({"cmd": "leds", "clear": True})
