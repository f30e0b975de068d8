"""lichess's own DGT client (``../shared/clients/lichess-dgt``, unmodified) in Debian's headless Chromium, and a
stand-in of the lichess Board API it talks to: what the LiveChess-compatible server's end-to-end test drives.

- :func:`bundle`: the client's sources bundled with esbuild and chessops, at the versions ``lichess/package-lock.json``
  pins (``make livechess-deps`` installs them with ``npm ci``).
- :class:`BoardApi`: the four Board API calls the client makes, one game whose opponent answers each of the
  user's moves from a script, and the page that loads the bundle (same origin, as on lichess.org).
- :class:`Browser`: Chromium driven over the DevTools protocol: console messages collected, the client's log read.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from tests.conftest import REQUIRE_ALL
from tests.e2e.helpers import free_port

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CLIENT = REPO.parent / "shared" / "clients" / "lichess-dgt"
ENTRY = CLIENT / "src" / "ui" / "dgt" / "src" / "dgt.ts"
NODE_MODULES = HERE / "lichess" / "node_modules"
CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-domain-reliability", "--no-pings", "--disable-default-apps", "--metrics-recording-only",
                  "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication",
                  "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1", "--window-size=1200,900"]
TOKEN = "lip_touchmove_test"


def missing() -> str | None:
    """Why the client cannot run here (None: it can)."""
    if not ENTRY.is_file():
        return f"lichess's client is not at {CLIENT}"
    if not (NODE_MODULES / ".bin" / "esbuild").exists() or not (NODE_MODULES / "chessops").is_dir():
        return "esbuild and chessops are not installed: `make livechess-deps`"
    if shutil.which(os.environ.get("TOUCHMOVE_CHROMIUM", "chromium")) is None:
        return "chromium is not installed: `make system-deps`"
    return None


def require_client() -> None:
    why = missing()
    if why is not None:
        if REQUIRE_ALL:
            pytest.fail(f"lichess's DGT client cannot run: {why} (TOUCHMOVE_REQUIRE_ALL=1)")
        pytest.skip(f"lichess's DGT client cannot run: {why}")


def bundle(out: Path) -> Path:
    """Bundle the client's unmodified sources with a one-line entry that starts the play page; return the file."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "tsconfig.json").write_text("{}\n")       # lila's tsconfig extends a file not copied
    entry = out / "entry.js"
    entry.write_text(f"import {{ initModule }} from {json.dumps(str(ENTRY))};\ninitModule({json.dumps(TOKEN)});\n")
    target = out / "dgt-play.js"
    subprocess.run([str(NODE_MODULES / ".bin" / "esbuild"), str(entry), "--bundle", "--format=iife",
                    "--target=es2020", f"--tsconfig={out / 'tsconfig.json'}", f"--outfile={target}",
                    "--log-level=warning"], check=True, env=dict(os.environ, NODE_PATH=str(NODE_MODULES)),
                   timeout=120)
    return target


def page(livechess_url: str) -> str:
    """The play page: the two elements the client writes to, its settings in localStorage, then the bundle."""
    settings = {"dgt-livechess-url": livechess_url, "dgt-verbose": "true", "dgt-speech-synthesis": "false"}
    sets = "".join(f"localStorage.setItem({json.dumps(k)}, {json.dumps(v)});" for k, v in settings.items())
    return ("<!doctype html><html><head><meta charset='utf-8'><title>dgt</title></head><body>"
            "<div id='dgt-play-zone'><pre id='dgt-play-zone-log'></pre></div>"
            f"<script>{sets}</script><script src='/dgt-play.js'></script></body></html>")


class BoardApi:
    """The lichess Board API for one game (``dgtTest1``): the user is White; each move the client posts is
    answered by the opponent's move ``replies`` names (none: the game is over, ``mate``)."""

    GAME = "dgtTest1"

    def __init__(self, bundle_file: Path, livechess_url: str, replies: Mapping[str, str]) -> None:
        self.bundle_file = bundle_file
        self.livechess_url = livechess_url
        self.replies = dict(replies)
        self.moves: list[str] = []
        #: (uci, time.monotonic()) of every move the client posted
        self.posts: list[tuple[str, float]] = []
        self.status = "started"
        self._streams: list[web.StreamResponse] = []
        self._changed = asyncio.Event()
        self.port = 0
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/", self._page)
        app.router.add_get("/dgt-play.js", self._bundle)
        app.router.add_get("/api/account", self._account)
        app.router.add_get("/api/stream/event", self._events)
        app.router.add_get("/api/board/game/stream/{id}", self._game)
        app.router.add_post("/api/board/game/{id}/move/{uci}", self._move)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def _authorised(self, request: web.Request) -> None:
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            raise web.HTTPUnauthorized(text='{"error":"No such token"}', content_type="application/json")

    async def _page(self, request: web.Request) -> web.Response:
        return web.Response(text=page(self.livechess_url), content_type="text/html")

    async def _bundle(self, request: web.Request) -> web.Response:
        return web.Response(body=self.bundle_file.read_bytes(), content_type="application/javascript")

    async def _account(self, request: web.Request) -> web.Response:
        self._authorised(request)
        return web.json_response({"id": "touchmover", "username": "Touchmover", "perfs": {}})

    async def _ndjson(self, request: web.Request) -> web.StreamResponse:
        self._authorised(request)
        response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await response.prepare(request)
        return response

    async def _events(self, request: web.Request) -> web.StreamResponse:
        response = await self._ndjson(request)
        await asyncio.sleep(0.5)        # after /api/account has answered (the game's handler needs it)
        await response.write(b'{"type":"gameStart","game":{"id":"%s"}}\n' % self.GAME.encode())
        with contextlib.suppress(ConnectionError):
            while True:
                await asyncio.sleep(5)
                await response.write(b"\n")
        return response

    def _state(self) -> dict[str, Any]:
        state: dict[str, Any] = {"type": "gameState", "moves": " ".join(self.moves), "wtime": 600_000,
                                 "btime": 600_000, "winc": 0, "binc": 0, "status": self.status}
        if self.status == "mate":
            state["winner"] = "white" if len(self.moves) % 2 else "black"
        return state

    async def _game(self, request: web.Request) -> web.StreamResponse:
        response = await self._ndjson(request)
        full = {"type": "gameFull", "id": self.GAME, "rated": False, "variant": {"key": "standard", "short": "Std"},
                "speed": "rapid", "clock": {"initial": 600_000, "increment": 0}, "initialFen": "startpos",
                "white": {"id": "touchmover", "name": "Touchmover", "title": None, "rating": 1500},
                "black": {"id": "opponent", "name": "Opponent", "title": None, "rating": 1500},
                "state": self._state()}
        self._streams.append(response)
        with contextlib.suppress(ConnectionError):
            await response.write((json.dumps(full) + "\n").encode())
            while True:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(5):
                        await self._changed.wait()
                self._changed.clear()
                await response.write(b"\n")
        return response

    async def _push(self) -> None:
        """The game's state to every open game stream, one line per chunk."""
        line = (json.dumps(self._state()) + "\n").encode()
        for stream in list(self._streams):
            try:
                await stream.write(line)
            except ConnectionError:
                self._streams.remove(stream)

    async def _move(self, request: web.Request) -> web.Response:
        self._authorised(request)
        uci = request.match_info["uci"]
        self.posts.append((uci, time.monotonic()))
        self.moves.append(uci)
        reply = self.replies.get(uci)
        if reply is None:
            self.status = "mate"
        await self._push()
        if reply is not None:
            await asyncio.sleep(0.2)
            self.moves.append(reply)
            await self._push()
        return web.json_response({"ok": True})


class Browser:
    """Headless Chromium on one page, driven over the DevTools protocol."""

    def __init__(self) -> None:
        self.port = free_port()
        self.profile = tempfile.mkdtemp(prefix="touchmove-chromium-")
        self.proc: subprocess.Popen[bytes] | None = None
        self.console: list[str] = []
        self._session: aiohttp.ClientSession | None = None
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._ids = 0
        self._answers: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        binary = shutil.which(os.environ.get("TOUCHMOVE_CHROMIUM", "chromium")) or "chromium"
        self.proc = subprocess.Popen([binary, *CHROMIUM_FLAGS, f"--remote-debugging-port={self.port}",
                                      "--remote-debugging-address=127.0.0.1", f"--user-data-dir={self.profile}",
                                      "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._session = aiohttp.ClientSession()
        async with asyncio.timeout(60):
            while True:
                with contextlib.suppress(aiohttp.ClientError):
                    async with self._session.get(f"http://127.0.0.1:{self.port}/json/list") as resp:
                        targets = await resp.json()
                    pages = [t for t in targets if t.get("type") == "page"]
                    if pages:
                        break
                await asyncio.sleep(0.2)
        self._ws = await self._session.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0)
        self._reader = asyncio.create_task(self._read())
        await self.call("Runtime.enable")
        await self.call("Page.enable")

    async def _read(self) -> None:
        assert self._ws is not None
        async for message in self._ws:
            if message.type != aiohttp.WSMsgType.TEXT:
                continue
            data = json.loads(message.data)
            if "id" in data and data["id"] in self._answers:
                self._answers.pop(data["id"]).set_result(data)
            elif data.get("method") == "Runtime.consoleAPICalled":
                args = data["params"].get("args", [])
                self.console.append(" ".join(str(a.get("value", a.get("description", ""))) for a in args))

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        assert self._ws is not None
        self._ids += 1
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._answers[self._ids] = answer
        await self._ws.send_str(json.dumps({"id": self._ids, "method": method, "params": params}))
        async with asyncio.timeout(30):
            return await answer

    async def open(self, url: str) -> None:
        await self.call("Page.navigate", url=url)

    async def log(self) -> str:
        """The client's own log (the ``<pre>`` it writes every console message to)."""
        answer = await self.call("Runtime.evaluate", expression="document.getElementById('dgt-play-zone-log')"
                                 "?.innerText ?? ''", returnByValue=True)
        return str(answer.get("result", {}).get("result", {}).get("value", ""))

    def said(self, words: str) -> bool:
        return any(words in line for line in self.console)

    async def stop(self) -> None:
        with contextlib.suppress(Exception):
            if self._ws is not None and not self._ws.closed:
                await asyncio.wait_for(self.call("Browser.close"), 5)
        if self._reader is not None:
            self._reader.cancel()
        if self._session is not None:
            await self._session.close()
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(5)
        shutil.rmtree(self.profile, ignore_errors=True)
