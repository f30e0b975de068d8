"""The arbiter's console in a real headless Chromium (Debian's package, driven by Playwright).

Simulated bridges publish through a private Mosquitto into the broadcaster; the page is checked for what an
arbiter of a big open needs: the attention queue (most urgent first, each item going to its board, the alert
count in the tab title), the touch timeline of a disputed ply with its claim window, named arbiters with the
audit log, a refused token, a token revoked by the chief, all 200 boards of a round on one 1920x1080 screen
and the phone layout. Screenshots are kept under ``artifacts/``.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import aiohttp
import aiomqtt
import pytest

from tests.broadcast.broadcast_helpers import chromium_path, tournament_data
from touchmove.broadcast.arbiter_book import file_entry
from touchmove.broadcast.service import BroadcastService
from touchmove.broadcast.tournament import parse_tournament
from touchmove.sim.broadcast_boards import SimBoard, SimBridge
from touchmove.sim.local_broker import LocalBroker

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
CHIEF, DEPUTY = "chief-token-0001", "deputy-token-0002"


async def touch(board: SimBoard, sq: str, piece: str, side: str = "mover", binds: bool = False) -> None:
    """A piece lifted, as the bridge publishes it (the ply under way)."""
    await board.event({"type": "touch", "game": board.game, "ply": board.ply + 1, "sq": sq, "piece": piece,
                       "side": side, "binds": binds})


async def play(board: SimBoard, *ucis: str, ms: int = 170_000) -> None:
    for uci in ucis:
        await board.move(uci, remaining_ms=ms)


async def set_the_scene(bridge: SimBridge) -> dict[int, SimBoard]:
    """Twelve boards, each with something (or nothing) for the arbiter."""
    boards = {n: bridge.board(f"b{n:02d}") for n in range(1, 13)}
    for b in boards.values():
        await b.start()
    for b in boards.values():
        await play(b, "e2e4", "e7e5")
    # board 4: a touch-move dispute at ply 5; Black then touches his knight, so the claim lapsed (4.8)
    b4 = boards[4]
    await play(b4, "g1f3", "b8c6")
    await touch(b4, "f1", "B", binds=True)
    await touch(b4, "c6", "n", side="opponent")  # Black adjusts his knight while White is to move
    await b4.alert("touch_move", "4.3.1", {"square": "f1", "piece": "B"})
    await play(b4, "f3g5")
    await touch(b4, "g8", "n", binds=True)
    # board 7: an illegal move, then Black's next move: in blitz it stands (B.3)
    await boards[7].alert("illegal_move", "7.5.1", {"uci": "e1e3"})
    await play(boards[7], "g1f3", "b8c6")
    # board 8: an illegal move just now: can still be acted on
    await boards[8].alert("illegal_move", "7.5.1", {"uci": "d1d5"})
    await play(boards[5], "d2d4", ms=1500)               # White has 1.5 s left and is to move again:
    await play(boards[5], "d7d5")                        # his flag falls while the console watches
    await boards[9].availability(False)                # offline
    boards[2].in_sync = False                           # out of sync (pieces knocked over)
    await boards[2].publish_state()
    await boards[10].kings_to_centre("1/2-1/2")         # a draw shown with the kings: not "out of sync"
    await boards[11].end("1-0", "checkmate", "5.1.1")   # a result to confirm
    await boards[11].start()                            # and the players set up again: a held game
    await boards[3].alert("changes_lost", "7.4", {"blind_ms": 4200})            # the board went blind
    await boards[6].alert("board_identity", "", {"port": "/dev/ttyACM3", "claimed": "b06", "bound": "b12"})
    await boards[12].event({"type": "result_rejected", "game": 1, "reason": "the board ended the game 1-0",
                            "result": "0-1", "declared": "resignation"})     # a declared result not applied
    return boards


def test_console_in_chromium(broker: LocalBroker, tmp_path: Path) -> None:
    asyncio.run(_console(broker, tmp_path, chromium_path()))


async def _console(broker: LocalBroker, tmp_path: Path, executable: str) -> None:
    from playwright.async_api import async_playwright, expect

    ARTIFACTS.mkdir(exist_ok=True)
    (tmp_path / "arbiters.toml").write_text(file_entry("Anna Chief", "chief", CHIEF)
                                            + file_entry("Bob Deputy", "arbiter", DEPUTY))
    data = tournament_data(12, port=broker.port, out=tmp_path)
    data["rounds"].append({**data["rounds"][0], "number": 4, "date": "2026-11-30"})
    t = parse_tournament(data)
    commands: list[dict[str, Any]] = []
    async with BroadcastService(t, port=0) as svc, aiomqtt.Client("127.0.0.1", broker.port) as client, \
            async_playwright() as pw:
        await client.subscribe("touchmove/boards/+/set", qos=1)

        async def collect() -> None:
            async for message in client.messages:
                commands.append({"topic": str(message.topic), **json.loads(bytes(message.payload))})

        collector = asyncio.create_task(collect())
        bridge = SimBridge(client)
        await bridge.online()
        boards_ = await set_the_scene(bridge)
        browser = await pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        errors: list[str] = []
        try:
            page = await browser.new_page(viewport={"width": 1600, "height": 1000})
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
            page.on("dialog", lambda d: asyncio.ensure_future(d.accept()))
            first = await page.goto(svc.url + "/?sync=1")
            # the console runs under its Content-Security-Policy (a violation is a console error, refused below)
            assert first is not None and "script-src 'self';" in first.headers["content-security-policy"]
            await expect(page.locator("#conn")).to_have_text("live")
            await expect(page.locator('.row[data-board="4"] .lm')).to_have_text("3. Ng5")

            # the queue: the fresh illegal move first; one item per need; the count in the tab title
            queue = page.locator("#queue li")
            await expect(queue.first.locator(".q-title")).to_have_text("Board 8 · illegal_move")
            await expect(queue.first.locator(".q-window")).to_contain_text("can be acted on (B.3)")
            await expect(page).to_have_title("(6) Test Open · round 3 · arbiter")
            titles = [await q.text_content() for q in await queue.locator(".q-title").all()]
            for wanted in ["Board 7 · illegal_move", "Board 4 · touch_move", "Board 9 · offline",
                           "Board 3 · changes_lost", "Board 6 · board_identity", "Board 12 · result_rejected",
                           "Board 2 · out of sync", "Board 10 · 1/2-1/2 to confirm", "Board 11 · 1-0 to confirm",
                           "Board 5 · white's flag", "Board 11 · a new game is held"]:
                await expect(page.locator("#queue .q-title", has_text=wanted)).to_have_count(1)
            titles = [await q.text_content() for q in await queue.locator(".q-title").all()]
            # the badge counts the items listed (issue 38: it said 0 beside 20 items), red for unacked alerts
            await expect(page.locator("#alert-count")).to_have_text(str(await queue.count()))
            await expect(page.locator("#alert-count")).to_have_class("badge bad")
            assert titles.index("Board 8 · illegal_move") < titles.index("Board 3 · changes_lost") \
                < titles.index("Board 6 · board_identity") < titles.index("Board 12 · result_rejected") \
                < titles.index("Board 9 · offline"), titles
            assert titles.index("Board 8 · illegal_move") < titles.index("Board 7 · illegal_move") \
                < titles.index("Board 9 · offline") < titles.index("Board 2 · out of sync") \
                < titles.index("Board 11 · 1-0 to confirm"), titles
            assert not any(t.startswith("Board 10 · out of sync") for t in titles)  # kings: no sync noise
            seven = page.locator("#queue li", has_text="Board 7 · illegal_move")
            await expect(seven.locator(".q-window")).to_contain_text("window closed (B.3)")
            await expect(seven.locator(".q-window")).to_contain_text("black played Nc6")
            await expect(page.locator('.row[data-board="10"]')).not_to_have_class("s-sync")
            await expect(page.locator('.row[data-board="2"]')).to_have_class("row s-sync")
            twelve = page.locator("#queue li", has_text="Board 12 · result_rejected")
            await expect(twelve.locator(".q-text")).to_contain_text("no ply · ")
            await expect(twelve.locator(".q-text")).to_contain_text("the board ended the game 1-0")
            await page.locator("#queue li", has_text="Board 6 · board_identity").click()  # each item: its board
            await expect(page.locator("#d-title")).to_have_text("Board 6 · b06 · game 1")
            await expect(page.locator("#d-alerts li").first).to_contain_text("board_identity · ply 3")
            assert page.url.endswith("#board-6")

            # an item goes to its board; the disputed ply's timeline says who touched what first, and when
            await page.locator("#queue li", has_text="Board 4 · touch_move").click()
            await expect(page.locator("#d-title")).to_have_text("Board 4 · b04 · game 1")
            await expect(page.locator('.row[data-board="4"]')).to_have_class("row s-alert selected")
            assert page.url.endswith("#board-4")
            await page.locator('#d-alerts li button', has_text="Timeline").click()
            await expect(page.locator("#tl-title")).to_contain_text("ply 5 (white to move) · Ng5")
            await expect(page.locator("#tl-summary")).to_contain_text(
                "first touched by white: the white bishop on f1 at")
            await expect(page.locator("#tl-summary")).to_contain_text("Obligation 4.3.1: move the white bishop on f1")
            rows = page.locator("#tl-rows tr")
            await expect(rows.first).to_contain_text("white lifted the white bishop on f1 (binds: 4.3)")
            await expect(page.locator("#tl-rows tr.k-alert")).to_contain_text("alert touch_move (art. 4.3.1)")
            await expect(page.locator("#tl-alerts .window")).to_contain_text("window closed (4.8)")
            await expect(page.locator("#tl-alerts .window")).to_contain_text("black knight on g8 touched (ply 6)")
            await expect(page.locator('#d-board [data-sq="f1"]')).to_have_class("sq l wp touched")
            await expect(page.locator('#d-board [data-sq="g5"]')).to_have_text("")  # the position before the ply
            await page.screenshot(path=str(ARTIFACTS / "console-timeline.png"))
            # back to the live position: the picture is updated in place, square by square
            await page.click("#tl-close")
            f6 = await page.query_selector('#d-board [data-sq="f6"]')
            assert f6 is not None and await f6.text_content() == ""
            await play(boards_[4], "g8f6")
            await expect(page.locator('#d-board [data-sq="f6"]')).to_have_text("♞")
            assert await f6.evaluate("e => e.isConnected && e.textContent === '♞'")
            exported = await (await page.request.get(svc.url + "/api/boards/4/evidence.json")).json()
            ply5 = next(p for p in exported["plies"] if p["ply"] == 5)
            assert ply5["first_touch"]["sq"] == "f1" and ply5["alerts"][0]["window"]["rule"] == "4.8"
            pgn = await (await page.request.get(svc.url + "/api/boards/4/evidence.pgn")).text()
            assert "3. Ng5 { [%clk 0:02:50] touchmove: " in pgn and "lift Bf1 binds" in pgn
            assert "alert touch_move art. 4.3.1 window closed" in pgn and pgn.count("touchmove:") == 2  # + ply 6

            # a wrong token is refused; the deputy's is accepted, and his acknowledgement is logged by name
            await page.fill("#token", "not-a-token")
            await page.click("#auth button")
            await expect(page.locator("#auth-state")).to_have_text("token refused")
            await page.fill("#token", DEPUTY)
            await page.click("#auth button")
            await expect(page.locator("#auth-state")).to_have_text("Bob Deputy")
            await queue.first.locator("button.ack").click()
            await expect(page).to_have_title("(5) Test Open · round 3 · arbiter")
            await page.click("#audit-panel summary")
            await expect(page.locator("#audit li").first).to_contain_text("Bob Deputy: acknowledge board 8")
            await page.locator('.row[data-board="8"]').click()
            await expect(page.locator("#d-alerts li").first).to_contain_text("acknowledged by Bob Deputy at")
            await page.locator('.row[data-board="4"]').click()
            await expect(page.locator("#d-title")).to_have_text("Board 4 · b04 · game 1")
            await expect(page.locator("#audit li").first).to_contain_text("acked false→true")
            await page.locator("#queue li", has_text="Board 11 · 1-0 to confirm").locator("button").click()
            await expect(page.locator("#audit li").first).to_contain_text("Bob Deputy: result board 11")
            await expect(page.locator("#audit li").first).to_contain_text('result_source "board"→"arbiter"')
            await expect(page.locator("#queue .q-title", has_text="Board 11 · 1-0 to confirm")).to_have_count(0)
            # the kings' draw confirmed: the kings still stand in the centre, and that is no alarm either
            await page.locator("#queue li", has_text="Board 10 · 1/2-1/2 to confirm").locator("button").click()
            await expect(page.locator("#queue .q-title", has_text="Board 10")).to_have_count(0)
            await expect(page.locator('.row[data-board="10"]')).to_have_class("row s-over")
            await page.locator("#d-actions form[data-action=promote] select").select_option("n")
            await page.locator("#d-actions form[data-action=promote] button").click()
            await expect(page.locator("#messages li").first).to_contain_text("board 4: promote sent")
            for _ in range(100):
                if commands:
                    break
                await asyncio.sleep(0.02)
            assert commands and commands[0]["topic"] == "touchmove/boards/b04/set"
            assert commands[0]["command"] == "promote" and commands[0]["piece"] == "n"
            await page.screenshot(path=str(ARTIFACTS / "console.png"))

            # without a token the audit log is not shown, nor who acknowledged (the stream carries neither)
            viewer = await browser.new_page(viewport={"width": 1400, "height": 900})
            viewer.on("pageerror", lambda exc: errors.append(str(exc)))
            await viewer.goto(svc.url + "/#board-8")
            await expect(viewer.locator("#d-alerts li").first).to_contain_text("acknowledged at")
            await viewer.click("#audit-panel summary")
            await expect(viewer.locator("#audit-locked")).to_be_visible()
            await expect(viewer.locator("#audit-count")).to_have_text("(arbiters only)")
            assert await viewer.locator("#audit li").count() == 0
            assert "Bob Deputy" not in await viewer.locator("body").inner_text()
            assert (await page.request.get(svc.url + "/api/audit")).status == 401
            assert (await page.request.get(svc.url + "/api/audit.jsonl")).status == 401

            # the chief revokes the deputy's token from his own console: the deputy's next action is refused
            chief = await browser.new_page(viewport={"width": 1400, "height": 900})
            chief.on("dialog", lambda d: asyncio.ensure_future(d.accept()))
            await chief.goto(svc.url + "/")
            await chief.fill("#token", CHIEF)
            await chief.click("#auth button")
            await expect(chief.locator("#auth-state")).to_have_text("Anna Chief (chief)")
            await chief.click("#audit-panel summary")
            await chief.locator('#arbiters li[data-arbiter="Bob Deputy"] button.revoke').click()
            await expect(chief.locator('#arbiters li[data-arbiter="Bob Deputy"]')).to_have_class("revoked")
            await expect(chief.locator("#audit li").first).to_contain_text("Anna Chief: revoke Bob Deputy")
            await page.locator("#queue li", has_text="Board 7 · illegal_move").locator("button.ack").click()
            await expect(page.locator("#auth-state")).to_have_text("token refused")
            await expect(page.locator("#messages li").first).to_contain_text("unknown or revoked")
            assert not next(a for a in svc.hub.storage.alerts if a.board == 7).acked
            # the revoked deputy's console no longer shows the log; the viewer never got an entry
            await expect(page.locator("#audit-count")).to_have_text("(arbiters only)")
            assert await page.locator("#audit li").count() == 0
            assert await viewer.locator("#audit li").count() == 0

            # the log is on disk, one JSON object per line, and exported as such
            lines = (tmp_path / "arbiter-audit.jsonl").read_text().splitlines()
            logged = [json.loads(line) for line in lines]
            assert [(e["arbiter"], e["action"], e["board"]) for e in logged] == [
                ("Bob Deputy", "acknowledge", 8), ("Bob Deputy", "result", 11), ("Bob Deputy", "result", 10),
                ("Bob Deputy", "promote", 4),
                ("Anna Chief", "revoke", None)]
            assert logged[1]["before"]["result_source"] == "board" and logged[1]["after"]["result"] == "1-0"
            async with chief.expect_download() as download:  # the export link sends the chief's token
                await chief.click("#audit-export")
            exported_log = Path(await (await download.value).path()).read_text()
            assert exported_log.splitlines() == lines
            await expect(chief.locator("#audit li")).to_have_count(len(lines))
            # the chief switches the round from the console: every console follows, and the log says who
            await chief.select_option("#round-select", "4")
            await chief.click("#round-form button")
            await expect(page).to_have_title(re.compile(r"Test Open · round 4 · arbiter$"))
            await expect(page.locator("#round-info")).to_contain_text("round 4")
            assert svc.hub.storage.round.number == 4
            await expect(chief.locator("#audit li").first).to_contain_text("Anna Chief: round")
            assert await page.locator("#audit li").count() == 0 and await viewer.locator("#audit li").count() == 0
            assert [e for e in errors if "status of 401" not in e] == []  # the refused tokens only
        finally:
            await browser.close()
            collector.cancel()
            await asyncio.gather(collector, return_exceptions=True)
        await bridge.clear_retained()


def test_console_phone_and_200_boards(broker: LocalBroker, tmp_path: Path) -> None:
    asyncio.run(_big_round(broker, tmp_path, chromium_path()))


async def _big_round(broker: LocalBroker, tmp_path: Path, executable: str) -> None:
    from playwright.async_api import async_playwright, expect

    ARTIFACTS.mkdir(exist_ok=True)
    data = tournament_data(200, port=broker.port, out=tmp_path)
    data["rounds"][0]["boards"][149]["white"]["name"] = "Abdusattorov-Wojtaszek, Nodirbek Maximilian"
    t = parse_tournament(data)
    async with BroadcastService(t, port=0) as svc, aiomqtt.Client("127.0.0.1", broker.port) as client, \
            async_playwright() as pw:
        bridge = SimBridge(client, publish_pgn=False)
        await bridge.online()
        boards = {n: bridge.board(f"b{n:02d}") for n in range(1, 201)}
        for b in boards.values():
            await b.start()
        for n in range(1, 201, 3):
            await play(boards[n], "d2d4", "d7d5", ms=150_000 - n)
        await boards[150].alert("board_mismatch", "7.4")
        await play(boards[37], "e2e4", "e7e5")
        await boards[37].alert("touch_move", "4.3.1", {"square": "f1"})
        await boards[88].alert("illegal_move", "7.5.1")
        await boards[120].availability(False)
        await boards[64].end("1-0", "checkmate", "5.1.1")
        browser = await pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1920, "height": 1080})
            await page.goto(svc.url + "/")
            await expect(page.locator(".row")).to_have_count(200)
            await expect(page.locator('.row[data-board="199"] .lm')).to_have_text("1... d5")
            await expect(page.locator('.row[data-board="37"] .lm')).to_have_text("2... e5")
            # every board of the round on one screen, no name cut
            boxes = await page.eval_on_selector_all(".row", "rs => rs.map(r => r.getBoundingClientRect().bottom)")
            await page.screenshot(path=str(ARTIFACTS / "console-200.png"))
            assert max(boxes) <= 1080, max(boxes)
            long_name = page.locator('.row[data-board="150"] .w')
            assert await long_name.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
            await expect(long_name).to_contain_text("Nodirbek Maximilian")
            await page.screenshot(path=str(ARTIFACTS / "console-200.png"))
            await expect(page.locator("#queue li").first).to_contain_text("Board 88 · illegal_move")
            await page.locator("#queue li", has_text="Board 150").click()
            await expect(page.locator("#d-white")).to_contain_text("Abdusattorov-Wojtaszek, Nodirbek Maximilian")
            # the board's detail open: still every board on the screen, none under the detail
            await asyncio.sleep(0.3)
            await page.screenshot(path=str(ARTIFACTS / "console-200-detail.png"))
            edges = await page.eval_on_selector_all(
                ".row", "rs => rs.map(r => { const b = r.getBoundingClientRect(); return [b.right, b.bottom]; })")
            assert max(e[1] for e in edges) <= 1080 and max(e[0] for e in edges) <= 1920, edges[-1]
            covered = await page.evaluate("""() => [...document.querySelectorAll('.row')].filter(r => {
                const b = r.getBoundingClientRect();
                const hit = document.elementFromPoint(b.left + 6, (b.top + b.bottom) / 2);
                return !(hit && r.contains(hit));
            }).map(r => r.dataset.board)""")
            assert covered == [], f"boards hidden with the detail open: {covered[:20]}"
            detail = await page.locator("#detail").bounding_box()
            assert detail and detail["x"] + detail["width"] <= 1920 and detail["y"] + detail["height"] <= 1080

            # the phone: the queue first, then the board it points to
            phone = await browser.new_page(viewport={"width": 390, "height": 844}, device_scale_factor=2,
                                           is_mobile=True, has_touch=True)
            await phone.goto(svc.url + "/")
            await expect(phone.locator("#queue li").first).to_contain_text("Board 88 · illegal_move")
            await expect(phone.locator("#d-title")).to_have_text("Board 88 · b88 · game 1")
            queue_box = await phone.locator("#queue-panel").bounding_box()
            detail_box = await phone.locator("#detail").bounding_box()
            table_box = await phone.locator("#boards-panel").bounding_box()
            assert queue_box and detail_box and table_box
            assert queue_box["y"] < 150 and queue_box["y"] < detail_box["y"] < table_box["y"]
            assert detail_box["x"] >= 0 and detail_box["x"] + detail_box["width"] <= 391
            assert await phone.evaluate("document.documentElement.scrollWidth") <= 390
            # only rows on screen are written: board 200, far below, catches up when it scrolls in
            row200 = phone.locator('.row[data-board="200"] .lm')
            await play(boards[200], "e2e4")
            # the page has the move (polled by evaluate: wait_for_function's string eval is refused by the CSP)
            for _ in range(200):
                if await phone.evaluate("state.boards.get(200).ply === 1"):
                    break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError("board 200's move never reached the page")
            await asyncio.sleep(0.5)
            assert await row200.text_content() == ""  # but has not written it off screen
            await row200.scroll_into_view_if_needed()
            await expect(row200).to_have_text("1. e4")
            await phone.screenshot(path=str(ARTIFACTS / "console-phone.png"), full_page=False)
        finally:
            await browser.close()
        await bridge.clear_retained()


def test_private_console_during_a_delay(broker: LocalBroker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A delayed round: the page without a token shows no board and says why; with the token it goes live; a
    deputy revoked meanwhile sees his console stop and say so."""
    monkeypatch.setenv("TOUCHMOVE_ARBITERS", "Bob Deputy=tok-bob")
    asyncio.run(_private(broker, tmp_path, chromium_path()))


async def _private(broker: LocalBroker, tmp_path: Path, executable: str) -> None:
    from playwright.async_api import async_playwright, expect

    ARTIFACTS.mkdir(exist_ok=True)
    data = tournament_data(3, port=broker.port, out=tmp_path)
    data["broadcast"]["delay_minutes"] = 15
    t = parse_tournament(data)
    async with BroadcastService(t, port=0) as svc, aiomqtt.Client("127.0.0.1", broker.port) as client, \
            async_playwright() as pw:
        board = SimBridge(client, publish_pgn=False).board("b01")
        await board.start()
        await play(board, "e2e4", "e7e5", "g1f3")
        browser = await pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1600, "height": 1000})
            await page.goto(svc.url + "/")
            await expect(page.locator("#conn")).to_contain_text("private while the broadcast is delayed")
            await asyncio.sleep(0.5)
            assert await page.locator(".row").count() == 0  # nothing of the live games without a token
            assert "Nf3" not in await page.content()
            await page.fill("#token", "s3cret")
            await page.locator("#auth button").click()
            await expect(page.locator(".row")).to_have_count(3)
            await expect(page.locator('.row[data-board="1"] .lm')).to_have_text("2. Nf3")
            await expect(page.locator("#conn")).to_have_text("live")
            await page.screenshot(path=str(ARTIFACTS / "console-private.png"))
            # a deputy's console, live; the chief revokes him: his page stops at once and says so
            deputy = await browser.new_page(viewport={"width": 1400, "height": 900})
            await deputy.goto(svc.url + "/")
            await deputy.fill("#token", "tok-bob")
            await deputy.locator("#auth button").click()
            await expect(deputy.locator("#conn")).to_have_text("live")
            await expect(deputy.locator('.row[data-board="1"] .lm')).to_have_text("2. Nf3")
            async with aiohttp.ClientSession() as http, http.post(
                    f"{svc.url}/api/arbiters/Bob Deputy/revoke", headers={"Authorization": "Bearer s3cret"}) as resp:
                assert resp.status == 200
            await expect(deputy.locator("#auth-state")).to_have_text("token refused")
            await expect(deputy.locator("#conn")).to_contain_text("private while the broadcast is delayed")
            await play(board, "b8c6")
            await expect(page.locator('.row[data-board="1"] .lm')).to_have_text("2... Nc6")  # the chief's goes on
            assert await deputy.locator('.row[data-board="1"] .lm').text_content() == "2. Nf3"
        finally:
            await browser.close()
        await board.bridge.clear_retained()
