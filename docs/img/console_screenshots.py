"""The README's pictures of the arbiter's console: ``console-200.png``, ``console-timeline.png``,
``console-phone.png`` in this folder.

A round of 200 boards (names drawn like the demo's) through a private Mosquitto into the broadcaster, with
something for the arbiter here and there: an illegal move whose B.3 window is open, a touch-move dispute whose
4.8 window closed, a board that went blind (``changes_lost``), a port claiming another board's id, a declared
result the board refused, a board mismatch, a board offline, results to confirm (the board's, the kings'). The
console is opened in Debian's Chromium (Playwright) as a viewer without a token, as the README shows it.

    .venv/bin/python docs/img/console_screenshots.py          (needs mosquitto and chromium: make system-deps)
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

import aiomqtt

from touchmove.broadcast.service import BroadcastService
from touchmove.broadcast.tournament import parse_tournament
from touchmove.sim.broadcast_boards import SimBoard, SimBridge
from touchmove.sim.local_broker import LocalBroker

HERE = Path(__file__).resolve().parent
FIRST = ["Anna", "Boris", "Chen", "Dara", "Emil", "Fatima", "Goran", "Hana", "Ivan", "Jana", "Kofi", "Lena",
         "Mateo", "Nadia", "Omar", "Petra", "Quinn", "Rosa", "Sven", "Tara"]
LAST = ["Almeida", "Berg", "Costa", "Dvorak", "Eriksen", "Fischer", "Gupta", "Horvat", "Ivanova", "Jensen",
        "Kowalski", "Lund", "Moreau", "Novak", "Okafor", "Petrov", "Quist", "Rossi", "Silva", "Tanaka"]
BOARDS = 200
CHROMIUM = os.environ.get("TOUCHMOVE_CHROMIUM", "/usr/bin/chromium")


def round_data(port: int, out: Path) -> dict[str, Any]:
    rng = random.Random(2026)

    def player(rank: int) -> dict[str, Any]:
        title = "GM" if rank < 30 else "IM" if rank < 80 else "FM" if rank < 150 else ""
        return {"name": f"{rng.choice(LAST)}, {rng.choice(FIRST)}", "title": title,
                "elo": 2740 - rank * 3 - rng.randrange(0, 3)}

    boards = [{"board": n, "board_id": f"b{n:03d}", "white": player(2 * n - 2), "black": player(2 * n - 1)}
              for n in range(1, BOARDS + 1)]
    boards[36]["white"]["name"] = "Abdusattorov-Wojtaszek, Nodirbek Maximilian"
    return {"event": "Lisbon Open 2026", "site": "Lisbon POR", "time_control": "180+2", "round": 3,
            "broadcast": {"output_dir": str(out), "token": "screenshots"},
            "brokers": [{"url": f"mqtt://127.0.0.1:{port}", "bases": ["touchmove"]}],
            "rounds": [{"number": 3, "date": "2026-12-01", "boards": boards}]}


async def play(board: SimBoard, plies: int, rng: random.Random) -> None:
    clocks = {True: 180_000, False: 180_000}
    for _ in range(plies):
        moves = list(board.position.legal_moves)
        if not moves or board.position.is_game_over():
            return
        side = board.position.turn
        clocks[side] = max(1_000, clocks[side] - rng.randrange(1_000, 9_000) + 2_000)
        await board.move(rng.choice(moves).uci(), remaining_ms=clocks[side])


async def touch(board: SimBoard, sq: str, piece: str, side: str = "mover", binds: bool = False) -> None:
    await board.event({"type": "touch", "game": board.game, "ply": board.ply + 1, "sq": sq, "piece": piece,
                       "side": side, "binds": binds})


async def set_the_round(bridge: SimBridge) -> None:
    rng = random.Random(7)
    boards = {n: bridge.board(f"b{n:03d}") for n in range(1, BOARDS + 1)}
    for b in boards.values():
        await b.start()
    for n, b in boards.items():
        if n not in (15, 37, 64):
            await play(b, rng.randrange(8, 60), rng)
    # board 37: White touches the bishop on f1 (binding), then plays the knight; Black then touches his knight
    b37 = boards[37]
    for uci in ("e2e4", "e7e5", "g1f3", "b8c6"):
        await b37.move(uci, remaining_ms=170_000)
    await touch(b37, "f1", "B", binds=True)
    await touch(b37, "c6", "n", side="opponent")
    await b37.alert("touch_move", "4.3.1", {"square": "f1", "piece": "B"})
    await b37.move("f3g5", remaining_ms=163_000)
    await touch(b37, "g8", "n", binds=True)
    await b37.move("g8f6", remaining_ms=168_000)
    await boards[88].alert("illegal_move", "7.5.1", {"uci": "d1h5"})                  # B.3: still open
    await boards[23].alert("changes_lost", "7.4", {"blind_ms": 4200})
    await boards[61].alert("board_identity", "", {"port": "/dev/ttyACM7", "claimed": "b061", "bound": "b116"})
    await boards[104].event({"type": "result_rejected", "game": 1, "reason": "the board ended the game 1-0",
                             "result": "0-1", "declared": "resignation"})
    await boards[142].alert("board_mismatch", "7.4")
    await boards[120].availability(False)
    for uci in ("g1f3", "g8f6", "b1c3", "b8c6", "g2g3", "g7g6"):  # the centre free for the kings
        await boards[15].move(uci, remaining_ms=171_000)
    await boards[15].kings_to_centre("1/2-1/2")
    for uci in ("f2f3", "e7e5", "g2g4", "d8h4"):
        await boards[64].move(uci, remaining_ms=175_000)
    await boards[64].end("0-1", "checkmate", "5.1.1")


async def main() -> None:
    from playwright.async_api import async_playwright, expect

    with LocalBroker() as broker, tempfile.TemporaryDirectory(prefix="touchmove-shots-") as tmp:
        t = parse_tournament(round_data(broker.port, Path(tmp)))
        async with BroadcastService(t, port=0) as svc, aiomqtt.Client("127.0.0.1", broker.port) as client, \
                async_playwright() as pw:
            bridge = SimBridge(client, publish_pgn=False)
            await bridge.online()
            await set_the_round(bridge)
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox",
                                                                               "--disable-gpu"])
            try:
                page = await browser.new_page(viewport={"width": 1920, "height": 1080})
                await page.goto(svc.url + "/")
                await expect(page.locator(".row")).to_have_count(BOARDS)
                await expect(page.locator('.row[data-board="37"] .lm')).to_have_text("3... Nf6")
                await expect(page.locator("#queue li").first).to_contain_text("Board 88 · illegal_move")
                await page.wait_for_timeout(1500)
                await page.screenshot(path=str(HERE / "console-200.png"))

                await page.set_viewport_size({"width": 1600, "height": 1000})
                await page.locator("#queue li", has_text="Board 37 · touch_move").click()
                await page.locator("#d-alerts li button", has_text="Timeline").click()
                await expect(page.locator("#tl-title")).to_contain_text("ply 5 (white to move) · Ng5")
                await page.wait_for_timeout(500)
                await page.screenshot(path=str(HERE / "console-timeline.png"))

                phone = await browser.new_page(viewport={"width": 390, "height": 844}, device_scale_factor=2,
                                               is_mobile=True, has_touch=True)
                await phone.goto(svc.url + "/")
                await expect(phone.locator("#d-title")).to_contain_text("Board 88")
                await phone.wait_for_timeout(1000)
                await phone.screenshot(path=str(HERE / "console-phone.png"))
            finally:
                await browser.close()
            await bridge.clear_retained()
    print(f"wrote {HERE / 'console-200.png'}, {HERE / 'console-timeline.png'}, {HERE / 'console-phone.png'}")


if __name__ == "__main__":
    if not LocalBroker.available() or not Path(CHROMIUM).exists():
        sys.exit("error: needs mosquitto and chromium (make system-deps)")
    asyncio.run(main())
