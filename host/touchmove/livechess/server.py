"""A LiveChess-compatible e-board server (aiohttp): the websocket at ``/api/v1.0`` and ``GET /api/v1.0/eboards``.

The boards are every board the bridges on the brokers publish (:class:`~.eboards.EBoards`, fed by the
broadcaster's MQTT consumer). A client sends ``{"id":N,"call":...}``:

``eboards``
    the board list (``serialnr``, ``source``, ``state``, ``battery``, ``comment``, ``board``, ``flipped``,
    ``clock``).
``subscribe`` ``{"feed":"eboardevent","id":F,"param":{"serialnr":S}}``
    feed ``F`` of this connection follows board ``S``: a feed at once, then one on every change.
``unsubscribe`` ``{"id":F}``
    ends feed ``F``.
``call`` ``{"id":F,"method":"setup","param":{"fen":FEN}}`` or ``{"id":F,"method":"flip","param":{"flip":true}}``
    on the board of feed ``F``: ``setup`` restarts its game from FEN through the bridge's ``setup`` command (a
    journaled ``setup`` record, the operator's log line naming this server); ``flip`` sets ``flipped``.

Answers are ``{"response":"call","id":N,"param":...,"time":ms}``; feeds ``{"response":"feed","id":F,
"param":{...},"time":ms}``; a message that cannot be served ``{"response":"error","id":N,"param":{"message":
...},"time":ms}`` and the connection stays open.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import time
from collections.abc import Sequence
from typing import Any

import chess
from aiohttp import WSMsgType, web

from touchmove.broadcast import bridge_topics
from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.broadcast.broadcaster import ActionError
from touchmove.broadcast.consumer import BridgeFeeds
from touchmove.broadcast.tournament import BrokerConfig
from touchmove.livechess.eboards import EBoard, EBoards, Feeds

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 1982
PATH = "/api/v1.0"
FEED = "eboardevent"
#: How long a ``setup`` waits for the bridge's answer and its new game.
SETUP_TIMEOUT_S = 5.0
#: Messages queued for one client before it is taken as gone (a client that reads nothing).
QUEUE_LIMIT = 2000
MAX_MESSAGE = 1024 * 1024


class CallError(Exception):
    """A client's message that cannot be served: its reason is the error's ``message``."""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


class Client:
    """One websocket connection: its feeds (feed id -> board) and the messages waiting to be sent."""

    def __init__(self, ws: web.WebSocketResponse, number: int) -> None:
        self.ws = ws
        self.number = number
        self.feeds: dict[Any, str] = {}
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()
        self.closing = False

    def send(self, obj: dict[str, Any]) -> None:
        if self.closing:
            return
        if self.queue.qsize() >= QUEUE_LIMIT:
            log.warning("client %d reads nothing (%d messages waiting): closed", self.number, QUEUE_LIMIT)
            self.closing = True
            self.queue.put_nowait(None)
            return
        self.queue.put_nowait(dumps(obj))

    async def write(self) -> None:
        while (text := await self.queue.get()) is not None:
            await self.ws.send_str(text)
        await self.ws.close()


def feed_id_of(value: Any) -> Any:
    """A feed id as given (LiveChess's clients use integers); anything but a scalar is refused."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise CallError("the feed's 'id' must be an integer")
    return value


def chess960_fen(fen: str) -> bool:
    """Whether a FEN's castling field names files (Shredder-FEN: a Chess960 start)."""
    fields = fen.split()
    return len(fields) > 2 and any(c not in "KQkq-" for c in fields[2])


class LiveChessServer:
    """The server: the boards from MQTT, the clients, the HTTP application."""

    def __init__(self, brokers: Sequence[BrokerConfig], *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
                 boards: Sequence[str] = ()) -> None:
        self.brokers = list(brokers)
        self.host, self.port = host, port
        self.eboards = EBoards(self._changed, boards)
        self.mqtt = BridgeFeeds(self, self.brokers, client_prefix="touchmove-livechess")
        self.clients: set[Client] = set()
        self._numbers = itertools.count(1)
        self._transactions = itertools.count(1)
        self._answers: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._runner: web.AppRunner | None = None
        self._mqtt_task: asyncio.Task[None] | None = None
        self.app = self.make_app()

    # -- MQTT --------------------------------------------------------------------------------------------
    def handle(self, msg: BridgeMessage, broker: int = 0) -> None:
        """A decoded bridge message (the MQTT consumer's sink)."""
        if msg.kind == "response" and isinstance(msg.payload, dict):
            waiting = self._answers.get(str(msg.payload.get("transaction")))
            if waiting is not None and not waiting.done():
                waiting.set_result(msg.payload)
            return
        self.eboards.handle(msg, broker)

    def _changed(self, board: EBoard, feeds: Feeds) -> None:
        for client in self.clients:
            for feed_id, serial in client.feeds.items():
                if serial == board.serial:
                    for san in feeds:
                        client.send({"response": "feed", "id": feed_id, "param": board.feed(san), "time": now_ms()})

    # -- HTTP and websocket ------------------------------------------------------------------------------
    def make_app(self) -> web.Application:
        app = web.Application()
        app.router.add_get(PATH, self._websocket)
        app.router.add_get(f"{PATH}/eboards", self._eboards_http)
        return app

    def listing(self) -> list[dict[str, Any]]:
        return [board.listing() for board in self.eboards.listed()]

    async def _eboards_http(self, request: web.Request) -> web.Response:
        return web.Response(text=dumps(self.listing()), content_type="application/json",
                            headers={"Access-Control-Allow-Origin": "*"})

    async def _websocket(self, request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse(max_msg_size=MAX_MESSAGE, autoping=True)
        if not ws.can_prepare(request).ok:
            return web.Response(status=400, text=dumps({"response": "error", "param": {
                "message": f"{PATH} is a websocket; the board list is GET {PATH}/eboards"}}),
                content_type="application/json")
        await ws.prepare(request)
        client = Client(ws, next(self._numbers))
        self.clients.add(client)
        log.info("client %d connected from %s", client.number, request.remote)
        writer = asyncio.create_task(client.write())
        try:
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    await self._message(client, message.data)
                elif message.type == WSMsgType.BINARY:
                    client.send(self._error(None, "messages are JSON text"))
                elif message.type == WSMsgType.ERROR:
                    break
        finally:
            self.clients.discard(client)
            client.queue.put_nowait(None)
            writer.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                await writer
            log.info("client %d disconnected", client.number)
        return ws

    @staticmethod
    def _error(call_id: Any, message: str) -> dict[str, Any]:
        return {"response": "error", "id": call_id, "param": {"message": message}, "time": now_ms()}

    async def _message(self, client: Client, text: str) -> None:
        call_id: Any = None
        try:
            try:
                request = json.loads(text)
            except ValueError:
                raise CallError("the message is not JSON") from None
            if not isinstance(request, dict):
                raise CallError("the message must be a JSON object with 'id' and 'call'")
            call_id = request.get("id")
            if isinstance(call_id, dict | list):
                call_id = None
                raise CallError("'id' must be an integer")
            call = request.get("call")
            param = request.get("param")
            if call == "eboards":
                result: Any = self.listing()
            elif call == "subscribe":
                self._subscribe(client, param)
                result = None
            elif call == "unsubscribe":
                self._unsubscribe(client, param)
                result = None
            elif call == "call":
                await self._call(client, param)
                result = None
            else:
                raise CallError(f"unknown call {str(call)[:40]!r}: one of eboards, subscribe, unsubscribe, call")
            client.send({"response": "call", "id": call_id, "param": result, "time": now_ms()})
            if call in ("subscribe", "call"):
                self._feed_now(client, param)
        except CallError as exc:
            client.send(self._error(call_id, str(exc)))

    def _board(self, serial: Any) -> EBoard:
        if not isinstance(serial, str):
            raise CallError("'serialnr' must be a string")
        board = self.eboards.boards.get(serial)
        if board is None or board not in self.eboards.listed():
            raise CallError(f"no eboard with serialnr {serial[:64]!r}")
        return board

    def _subscribe(self, client: Client, param: Any) -> None:
        if not isinstance(param, dict):
            raise CallError("subscribe needs 'param': {\"feed\":\"eboardevent\",\"id\":1,\"param\":{\"serialnr\":...}}")
        if param.get("feed") != FEED:
            raise CallError(f"unknown feed {str(param.get('feed'))[:40]!r}: only {FEED!r}")
        feed_id = feed_id_of(param.get("id"))
        inner = param.get("param")
        board = self._board(inner.get("serialnr") if isinstance(inner, dict) else None)
        client.feeds[feed_id] = board.serial

    def _unsubscribe(self, client: Client, param: Any) -> None:
        feed_id = feed_id_of(param.get("id") if isinstance(param, dict) else None)
        if client.feeds.pop(feed_id, None) is None:
            raise CallError(f"no feed {feed_id!r} on this connection")

    def _feed_board(self, client: Client, param: Any) -> tuple[Any, EBoard]:
        feed_id = feed_id_of(param.get("id") if isinstance(param, dict) else None)
        serial = client.feeds.get(feed_id)
        if serial is None:
            raise CallError(f"no feed {feed_id!r} on this connection: subscribe first")
        return feed_id, self._board(serial)

    def _feed_now(self, client: Client, param: Any) -> None:
        """After a subscription, a setup or a flip: the board's feed at once (a client waits for it)."""
        feed_id = param.get("id") if isinstance(param, dict) else None
        serial = client.feeds.get(feed_id)
        board = self.eboards.boards.get(serial) if serial is not None else None
        if board is None:
            return
        if isinstance(param, dict) and param.get("method") in ("setup", "flip"):
            self._changed(board, [None])      # every client of the board: it changed for all of them
        else:
            client.send({"response": "feed", "id": feed_id, "param": board.feed(), "time": now_ms()})

    async def _call(self, client: Client, param: Any) -> None:
        _, board = self._feed_board(client, param)
        assert isinstance(param, dict)
        method, args = param.get("method"), param.get("param")
        if method == "flip":
            if not isinstance(args, dict) or not isinstance(args.get("flip"), bool):
                raise CallError('flip needs \'param\': {"flip": true} or {"flip": false}')
            board.flipped = args["flip"]
            return
        if method == "setup":
            fen = args.get("fen") if isinstance(args, dict) else None
            if not isinstance(fen, str):
                raise CallError('setup needs \'param\': {"fen": "<FEN>"}')
            await self._setup(client, board, fen)
            return
        raise CallError(f"unknown method {str(method)[:40]!r}: setup or flip")

    async def _setup(self, client: Client, board: EBoard, fen: str) -> None:
        """Restart the board's game from ``fen`` through the bridge's ``setup`` command; return once its new game
        is followed (its feeds then carry ``san`` from it)."""
        try:
            chess.Board(fen, chess960=chess960_fen(fen))
        except ValueError as exc:
            raise CallError(f"setup: not a FEN: {exc}") from None
        transaction = f"livechess-{client.number}-{next(self._transactions)}"
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._answers[transaction] = answer
        number = board.game.number
        payload = bridge_topics.command("setup", fen=fen, chess960=chess960_fen(fen), transaction=transaction)
        try:
            await self.mqtt.publish(board.broker, bridge_topics.set_topic(board.base, board.serial), payload)
            async with asyncio.timeout(SETUP_TIMEOUT_S):
                reply = await answer
                if reply.get("status") != "ok":
                    raise CallError(f"setup refused by the bridge: {str(reply.get('error'))[:200]}")
                while board.game.number == number:      # its game_start (events and answers are two topics)
                    await asyncio.sleep(0.01)
        except ActionError as exc:
            raise CallError(f"setup: {exc}") from None
        except TimeoutError:
            raise CallError(f"setup: the bridge did not answer within {SETUP_TIMEOUT_S:g} s") from None
        finally:
            self._answers.pop(transaction, None)
        board.set_up = True
        log.info("board %s set up from %s by client %d (transaction %s)", board.serial, fen, client.number,
                 transaction)

    # -- running -----------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"ws://{self.host}:{self.port}{PATH}"

    async def start(self) -> None:
        """Listen (port 0: any free one, then :attr:`port` says which) and follow the brokers."""
        self._runner = web.AppRunner(self.app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        try:
            await site.start()
        except OSError:
            await self._runner.cleanup()
            self._runner = None
            raise
        if self.port == 0:
            self.port = int(self._runner.addresses[0][1])
        self._mqtt_task = asyncio.create_task(self.mqtt.run(), name="livechess-mqtt")

    async def stop(self) -> None:
        for client in list(self.clients):
            await client.ws.close()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._mqtt_task is not None:
            self._mqtt_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._mqtt_task

    async def __aenter__(self) -> LiveChessServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
