"""The arbiter's dashboard in a real headless Chromium (Debian's package, driven by Playwright).

A simulated board plays moves and the dashboard shows them; an alert is raised and acknowledged from the
page; an arbiter action on the page reaches the bridge's ``set`` topic. A screenshot is kept under
``artifacts/``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiomqtt

from tests.broadcast.broadcast_helpers import chromium_path, tournament_data
from touchmove.broadcast.local_broker import LocalBroker
from touchmove.broadcast.service import BroadcastService
from touchmove.broadcast.simboards import SimBridge
from touchmove.broadcast.tournament import parse_tournament

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def test_dashboard_in_chromium(broker: LocalBroker, tmp_path: Path) -> None:
    executable = chromium_path()
    asyncio.run(_dashboard(broker, tmp_path, executable))


async def _dashboard(broker: LocalBroker, tmp_path: Path, executable: str) -> None:
    from playwright.async_api import async_playwright, expect

    ARTIFACTS.mkdir(exist_ok=True)
    t = parse_tournament(tournament_data(6, port=broker.port, out=tmp_path))
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
        boards = [bridge.board(f"b{n:02d}") for n in range(1, 7)]
        for b in boards:
            await b.start()
        for uci in ["d2d4", "g8f6", "c2c4", "e7e6"]:
            await boards[3].move(uci, remaining_ms=170_000)
        await boards[5].move("e2e4")

        browser = await pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        page = await browser.new_page(viewport={"width": 1400, "height": 1000})
        page_errors: list[str] = []
        page.on("pageerror", lambda exc: page_errors.append(str(exc)))
        page.on("console", lambda msg: page_errors.append(msg.text) if msg.type == "error" else None)
        try:
            await page.goto(svc.url + "/")
            await expect(page.locator("#conn")).to_have_text("live")
            tile1 = page.locator('article.board[data-board="1"]')
            await expect(tile1.locator(".p-white")).to_contain_text("White, Player 1")
            await expect(page.locator('article.board[data-board="4"] .last-move')).to_have_text("2... e6")

            # moves on board 1 appear as they are played
            for uci, shown in [("e2e4", "1. e4"), ("e7e5", "1... e5"), ("g1f3", "2. Nf3"),
                               ("b8c6", "2... Nc6"), ("f1b5", "3. Bb5")]:
                await boards[0].move(uci, remaining_ms=175_000)
                await expect(tile1.locator(".last-move")).to_have_text(shown, timeout=2000)
            await expect(tile1).to_have_attribute("data-ply", "5")
            await expect(tile1.locator(".clock")).to_have_text("clk 2:55")
            await expect(tile1.locator(".svg svg")).to_have_count(1)
            version = await tile1.get_attribute("data-version")
            await expect(tile1).to_have_attribute("data-svg-version", version or "")  # the picture follows
            assert await tile1.locator(".svg svg .lastmove").count() == 2  # f1 and b5 marked

            # an alert appears in the feed and marks its board
            await boards[1].alert("touch_move", "4.3.1", {"square": "g1"})
            alert = page.locator("li.alert").first
            await expect(alert.locator(".code")).to_have_text("Board 2 · touch_move")
            await expect(alert.locator(".meta")).to_contain_text("art. 4.3.1")
            await expect(page.locator('article.board[data-board="2"]')).to_have_class("board alerting")
            await expect(page.locator("#alert-count")).to_have_text("1")

            # unlock the actions with the token; a promotion piece goes to the bridge
            await page.fill("#token", "s3cret")
            await page.click("#auth button")
            await expect(page.locator("#auth-state")).to_have_text("arbiter")
            tile3 = page.locator('article.board[data-board="3"]')
            await tile3.locator("summary").click()
            await tile3.locator("form[data-action=promote] select").select_option("n")
            await tile3.locator("form[data-action=promote] button").click()
            await expect(page.locator("#messages li").first).to_contain_text("board 3: promote sent")
            await tile3.locator("form[data-action=result] select").select_option("1/2-1/2")
            await tile3.locator("form[data-action=result] button").click()
            await expect(tile3.locator(".result")).to_have_text("1/2-1/2")
            await page.screenshot(path=str(ARTIFACTS / "broadcast-dashboard.png"), full_page=True)

            # acknowledge the alert from the page
            await page.click("#hide-acked")  # show acknowledged alerts too
            await alert.locator("button.ack").click()
            await expect(alert).to_have_class("alert acked")
            await expect(page.locator("#alert-count")).to_have_text("0")
            assert svc.hub.alerts[0].acked
            await expect(page.locator('article.board[data-board="2"]')).to_have_class("board")
            await page.screenshot(path=str(ARTIFACTS / "broadcast-dashboard-acked.png"), full_page=True)
            for _ in range(100):
                if commands:
                    break
                await asyncio.sleep(0.02)
            assert page_errors == []
        finally:
            await browser.close()
            collector.cancel()
            await asyncio.gather(collector, return_exceptions=True)
        assert commands and commands[0]["topic"] == "touchmove/boards/b03/set"
        assert commands[0]["command"] == "promote" and commands[0]["piece"] == "n"
        assert '[Result "1/2-1/2"]' in svc.hub.round_pgn().split("[Event")[3]
        await bridge.clear_retained()
