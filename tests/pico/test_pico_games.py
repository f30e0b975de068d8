"""Games end to end on the emulated Pico: magnets over squares at the sensors' pins, the stock MicroPython image
running the firmware (.mpy, as installed by a builder), USB CDC on a pty, the real ``touchmove run``, Mosquitto,
the journal and ``touchmove export``. Pace: rig.PACE (about 0.4 s a ply)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import chess
import pytest

from tests.e2e.helpers import OPERA, game_moves
from tests.pico.emulator import BOARD_ID, EmulatedPico, FlashCache
from tests.pico.rig import SPEEDUP, BridgeRig, board_timeline, budget_s

#: board.json for each driver's profile (hc165 is the firmware's default profile: no board.json needed)
PROFILES: dict[str, dict[str, str] | None] = {
    "hc165": None,
    "matrix": {"profile": "matrix"},
    "mcp23017": {"profile": "mcp23017"},
    "hall_mux": {"profile": "hall_mux"},
}


def play_game(rig: BridgeRig, flashes: FlashCache, driver: str, moves: list[chess.Move],
              start: chess.Board | None = None, board_id: str = BOARD_ID, name: str = "ttyPICO0") -> dict[str, int]:
    start = start or chess.Board()
    pico = rig.board(flashes.board(PROFILES[driver]), driver, name, board_id=board_id, occ=start.occupied).start()
    assert rig.sub is not None
    rig.sub.wait_for(lambda: any(e.get("type") == "board_online" or e.get("type") == "game_start"
                                 for e in rig.events(board_id)) or bool(pico.lines()), 120, "the board's hello")
    # hall_mux scans at 50 Hz (bench/README.md): its debounce needs 20-40 ms of a steady field, and at twice the
    # fast pace a capture's victim can leave and the capturing piece land within that (a real board would miss
    # it too); it plays at the hand model's fast pace, not halved
    timeline = board_timeline(start, moves, speedup=1 if driver == "hall_mux" else SPEEDUP)
    mark = len(pico.events)
    pico.play(timeline)
    want = [m.uci() for m in moves]
    rig.wait_moves(board_id, want, budget_s(timeline))
    counts = rig.assert_exact(board_id, want)
    # every clock press at the button pins became a button record on the wire: the last press comes after the
    # last move (the game is over on MQTT before it is made), so wait until 1 s of emulated time after it
    done = pico.wait(lambda e: e.get("ev") == "timeline_done", 300, "the end of the timeline", mark)
    pico.wait(lambda e: e.get("ev") == "line" and e["us"] > done["us"] + 1_000_000, 300, "a line 1 s later", mark)
    presses = [e["press"] for e in timeline if "press" in e]
    buttons = [r["id"] for r in pico.lines() if r["type"] == "button"]
    # Every press, also while the board answers a backlog of commands from a busy bridge (the drivers that take
    # most of a scan slot lost the first ones there, when the firmware carried out several commands between two
    # scans and a USB write waited for the host: docs/firmware.md)
    assert buttons == presses, (f"{driver}: {len(presses) - len(buttons)} of {len(presses)} clock presses lost "
                                f"(first lost: {first_lost(buttons, presses)})")
    assert_diag_whole(pico, driver)
    return counts


def assert_diag_whole(pico: EmulatedPico, driver: str) -> None:
    """A diag from the host comes back whole: the scan part and, on hall_mux, the four ADC parts with all 64
    readings (before, hall_mux's five parts were all queued into a 512-byte buffer at once and inputs 32-63 never
    arrived: "lost": 2)."""
    mark = len(pico.events)
    pico.play([{"t": 0, "send": '{"cmd":"diag"}\n'}])
    parts = 5 if driver == "hall_mux" else 1
    last = "adc" if driver == "hall_mux" else "scan"

    def done(e: dict[str, Any]) -> bool:
        return e.get("ev") == "line" and '"diag"' in e["text"] and f'"part":"{last}"' in e["text"] and (
            last == "scan" or '"from":48' in e["text"])

    pico.wait(done, 300, "the diag's last part", mark)
    diag = [json.loads(e["text"]) for e in pico.events[mark:] if e.get("ev") == "line" and '"diag"' in e["text"]]
    assert len(diag) == parts, diag
    scan = diag[0]
    # ("lost" counts since boot the replies that found the output full, as under the bridge's hello flood at
    # boot; a diag's own lines wait for room and are never among them)
    assert scan["part"] == "scan" and scan["driver"] == driver, scan
    # the output's chunk path watches the endpoint the host found in the image's USB descriptor (0x82 on the
    # stock 1.28 image), read by the firmware from that same descriptor
    usb = pico.of("usb")[-1]
    assert usb["in_ep"] == 2 and scan["usb_in_ep"] == usb["in_ep"], (usb, scan)
    if driver == "hall_mux":
        assert [d["from"] for d in diag[1:]] == [0, 16, 32, 48]
        assert sum(len(d["v"]) for d in diag[1:]) == 64


def first_lost(buttons: list[str], presses: list[str]) -> int:
    """The index of the first press with no button record."""
    for i, (b, p) in enumerate(zip(buttons, presses, strict=False)):
        if b != p:
            return i
    return len(buttons)


@pytest.mark.parametrize("driver", ["hc165", "matrix", "mcp23017", "hall_mux"])
def test_opera_game_on_each_driver(rig: BridgeRig, flashes: FlashCache, driver: str) -> None:
    counts = play_game(rig, flashes, driver, game_moves(OPERA))
    assert counts == {"played": 33, "published": 33, "journaled": 33, "exported": 33}


def test_led_command_reaches_the_led_pin(flashes: FlashCache, tmp_path: Path) -> None:
    """A leds command from the host lights the squares' pixels in the WS2812 frame at GP22 (serpentine strip:
    e2 is LED 11, e4 LED 27), green only, no brighter than asked; the other 62 stay dark."""
    from tests.pico.bench_pico import Host

    pico = EmulatedPico(flashes.board(None), tmp_path / "ttyPICO0", "hc165").start()
    try:
        pico.wait(lambda e: e.get("ev") == "usb", 120, "USB")
        host = Host(tmp_path / "ttyPICO0")
        host.send({"cmd": "hello"})
        host.wait("hello", 300)
        frames = pico.leds()["frames"]
        host.send({"cmd": "leds", "squares": ["e2", "e4"], "color": [0, 200, 0]})
        host.send({"cmd": "ping", "id": 1})
        host.wait("pong", 300)
        host.close()
        leds = pico.leds()
        assert leds["frames"] > frames
        px = leds["pixels"]
        assert len(px) == 64
        lit = {i for i, p in enumerate(px) if any(p)}
        assert lit == {11, 27}, lit
        for i in lit:
            r, g, b = px[i]
            assert r == b == 0 and 0 < g <= 200
    finally:
        pico.stop()
