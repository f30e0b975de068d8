"""Permissions hold for the life of a connection: a revoked arbiter's open event stream gets nothing more (the
console's revoke and the CLI's, with the tokens file elsewhere than the output directory), an anonymous stream
ends when its round turns delayed; the session cookie holds no token; security headers on every response."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import chess
import pytest
from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient, TestServer

from tests.broadcast.broadcast_helpers import tournament_data
from touchmove.broadcast.arbiter_book import ARBITERS_FILE_ENV, digest, file_entry
from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.broadcast.broadcaster import Broadcaster
from touchmove.broadcast.server import COOKIE, make_app
from touchmove.broadcast.tournament import Tournament, parse_tournament
from touchmove.cli import main
from touchmove.clocks import ManualClock

#: Plenty of legal moves for one board: knights out and back.
SHUFFLE = ["g1f3", "g8f6", "f3g1", "f6g8"]


def tournament(tmp_path: Path, delay: float = 15, round4_delay: float | None = None) -> Tournament:
    data = tournament_data(2, out=tmp_path)
    data["broadcast"]["delay_minutes"] = delay
    if round4_delay is not None:
        r4 = json.loads(json.dumps(data["rounds"][0]))
        r4["number"], r4["delay_minutes"] = 4, round4_delay
        r4.pop("date")
        data["rounds"].append(r4)
    return parse_tournament(data)


class Feed:
    """A board's moves as a bridge sends them (knights shuffling, forever legal)."""

    def __init__(self, hub: Broadcaster, board_id: str = "b01", game: int = 1) -> None:
        self.hub, self.board_id, self.game, self.ply = hub, board_id, game, 0
        self.send({"type": "game_start", "fen": chess.STARTING_FEN})

    def send(self, event: dict[str, Any]) -> None:
        self.hub.handle(BridgeMessage("touchmove", self.board_id, "events",
                                      {**event, "game": self.game, "board": self.board_id, "session": "s1"}))

    def move(self) -> int:
        """Play the next ply; return its number (what a stream's ``board`` update then says)."""
        self.ply += 1
        self.send({"type": "move", "ply": self.ply, "uci": SHUFFLE[(self.ply - 1) % 4]})
        self.hub.streams.flush()
        return self.ply


class Stream:
    """An open ``/api/stream``: the ``board`` updates it got (ply numbers) and when it ended."""

    def __init__(self, resp: ClientResponse) -> None:
        self.resp = resp
        self.plies: list[int] = []
        self.ended: float | None = None
        self.task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        kind = ""
        while True:
            line = await self.resp.content.readline()
            if not line:
                self.ended = time.monotonic()
                return
            text = line.decode().strip()
            if text.startswith("event: "):
                kind = text[7:]
            elif text.startswith("data: ") and kind == "board":
                self.plies.append(json.loads(text[6:])["ply"])

    async def wait(self, predicate: Any, timeout: float = 3.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            assert time.monotonic() < deadline, "timed out"
            await asyncio.sleep(0.01)


async def live_for(feed: Feed, seconds: float) -> list[int]:
    """Play a ply every 50 ms for ``seconds``; return their numbers."""
    played = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        played.append(feed.move())
        await asyncio.sleep(0.05)
    return played


def test_a_revoked_arbiters_stream_gets_nothing_more(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asyncio.run(_revoked_stream(tmp_path, monkeypatch))


async def _revoked_stream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the tokens file is elsewhere than the output directory (TOUCHMOVE_ARBITERS_FILE)
    tokens = tmp_path / "etc" / "arbiters.toml"
    tokens.parent.mkdir()
    tokens.write_text(file_entry("Anna Chief", "chief", "tok-anna") + file_entry("Bob", "arbiter", "tok-bob")
                      + file_entry("Carl", "arbiter", "tok-carl"))
    monkeypatch.setenv(ARBITERS_FILE_ENV, str(tokens))
    out = tmp_path / "out"
    hub = Broadcaster(tournament(out), output_dir=out, clock=ManualClock()).open()
    assert hub.outputs.console_private
    feed = Feed(hub)
    async with TestClient(TestServer(make_app(hub, None))) as client:
        bob = Stream(await client.get("/api/stream?svg=0", headers={"Authorization": "Bearer tok-bob"}))
        # Carl's browser streams with the session cookie /api/auth gave it
        assert (await client.post("/api/auth", headers={"Authorization": "Bearer tok-carl"})).status == 200
        carl = Stream(await client.get("/api/stream?svg=0"))
        client.session.cookie_jar.clear()
        await live_for(feed, 0.3)
        await bob.wait(lambda: feed.ply in bob.plies)
        await carl.wait(lambda: feed.ply in carl.plies)
        # the chief revokes Bob from the console: his stream ends, the plies after get nowhere
        anna = {"Authorization": "Bearer tok-anna"}
        assert (await client.post("/api/arbiters/Bob/revoke", headers=anna)).status == 200
        revoked_at, after = time.monotonic(), feed.ply
        later = await live_for(feed, 1.5)
        assert bob.ended is not None and bob.ended - revoked_at < 1.0
        assert not set(later) & set(bob.plies) and max(bob.plies) <= after + 1
        assert set(later) <= set(carl.plies)  # Carl's stream goes on
        # the CLI revokes Carl, beside the tokens file: the broadcaster reads it there (one place)
        assert main(["arbiters", "revoke", str(tokens), "Carl"]) == 0
        revoked_at, after = time.monotonic(), feed.ply
        later = await live_for(feed, 1.5)
        assert carl.ended is not None and carl.ended - revoked_at < 1.0
        assert len(set(later) & set(carl.plies)) <= 1  # at most the ply under way while the file was written
        refused = await client.post("/api/boards/1/result", json={"result": "1-0"},
                                    headers={"Authorization": "Bearer tok-carl"})
        assert refused.status == 401  # the revoked token is refused (it was 200 with the file elsewhere)
        # a revoked arbiter's new stream is refused while the console is private
        assert (await client.get("/api/stream?svg=0", headers={"Authorization": "Bearer tok-bob"})).status == 401
    assert (tokens.parent / "arbiters-revoked.json").exists()


def test_a_round_switched_to_a_delay_ends_open_anonymous_streams(tmp_path: Path) -> None:
    asyncio.run(_switched(tmp_path))


async def _switched(tmp_path: Path) -> None:
    hub = Broadcaster(tournament(tmp_path, delay=0, round4_delay=15), output_dir=tmp_path,
                      clock=ManualClock()).open()
    assert not hub.outputs.console_private
    feed = Feed(hub)
    async with TestClient(TestServer(make_app(hub, "s3cret"))) as client:
        viewer = Stream(await client.get("/api/stream?svg=0"))
        arbiter = Stream(await client.get("/api/stream?svg=0", headers={"Authorization": "Bearer s3cret"}))
        await live_for(feed, 0.3)
        await viewer.wait(lambda: feed.ply in viewer.plies)
        hub.switch_round(4)  # round 4 is delayed: the console turns private
        switched_at = time.monotonic()
        round4 = Feed(hub, game=2)
        later = await live_for(round4, 1.0)
        assert viewer.ended is not None and viewer.ended - switched_at < 0.5
        assert not set(later) & set(viewer.plies[viewer.plies.index(feed.ply) + 1:])
        assert arbiter.ended is None and set(later) <= set(arbiter.plies)  # the arbiter's goes on
        assert (await client.get("/api/stream?svg=0")).status == 401


def test_the_session_cookie_holds_no_token_and_dies_with_revocation(tmp_path: Path) -> None:
    asyncio.run(_cookie(tmp_path))


async def _cookie(tmp_path: Path) -> None:
    tokens = tmp_path / "arbiters.toml"
    tokens.write_text(file_entry("Anna Chief", "chief", "tok-anna") + file_entry("Bob", "arbiter", "tok-bob"))
    t = tournament(tmp_path)
    hub = Broadcaster(t, output_dir=tmp_path, clock=ManualClock()).open()
    async with TestClient(TestServer(make_app(hub, None))) as client:
        resp = await client.post("/api/auth", headers={"Authorization": "Bearer tok-bob"})
        assert resp.status == 200
        cookie = resp.cookies[COOKIE].value
        assert "tok-bob" not in cookie and digest("tok-bob") not in cookie
        assert "HttpOnly" in resp.headers["Set-Cookie"] and "SameSite=Strict" in resp.headers["Set-Cookie"]
        assert (tmp_path / "console-session.key").stat().st_mode & 0o777 == 0o600
        assert (await client.get("/api/state?svg=0")).status == 200  # the cookie opens the private views
        client.session.cookie_jar.clear()
        forged = cookie.split(".")[0] + "." + "A" * 43
        assert (await client.get("/api/state?svg=0", cookies={COOKIE: forged})).status == 401
        assert (await client.get("/api/state?svg=0", cookies={COOKIE: "tok-bob"})).status == 401
    # a restart keeps the session (the key is on disk)
    again = Broadcaster(t, output_dir=tmp_path, clock=ManualClock()).open()
    async with TestClient(TestServer(make_app(again, None))) as client:
        assert (await client.get("/api/state?svg=0", cookies={COOKIE: cookie})).status == 200
        anna = {"Authorization": "Bearer tok-anna"}
        assert (await client.post("/api/arbiters/Bob/revoke", headers=anna)).status == 200
        assert (await client.get("/api/state?svg=0", cookies={COOKIE: cookie})).status == 401


def test_security_headers_on_every_response(tmp_path: Path) -> None:
    asyncio.run(_headers(tmp_path))


async def _headers(tmp_path: Path) -> None:
    hub = Broadcaster(tournament(tmp_path), output_dir=tmp_path, clock=ManualClock()).open()
    async with TestClient(TestServer(make_app(hub, "s3cret"))) as client:
        auth = {"Authorization": "Bearer s3cret"}
        requests = [("GET", "/", {}), ("GET", "/static/dashboard.js", {}), ("GET", "/round/3.pgn", {}),
                    ("GET", "/live/tournament.json", {}), ("GET", "/status.json", {}), ("GET", "/nowhere", {}),
                    ("GET", "/api/state", {}), ("GET", "/board/1.svg", auth), ("POST", "/api/auth", {}),
                    ("POST", "/api/boards/1/nothing", auth), ("GET", "/api/stream?svg=0", auth)]
        statuses = []
        for method, path, headers in requests:
            async with client.request(method, path, headers=headers) as resp:
                statuses.append(resp.status)
                h = resp.headers
                assert h.get("X-Content-Type-Options") == "nosniff", path
                assert h.get("X-Frame-Options") == "DENY", path
                assert "frame-ancestors 'none'" in h.get("Content-Security-Policy", ""), path
                if path.endswith(".svg"):
                    assert "script-src" not in h["Content-Security-Policy"]  # default-src 'none': no script
                else:
                    assert "script-src 'self';" in h["Content-Security-Policy"], path
        assert statuses == [200, 200, 200, 200, 200, 404, 401, 200, 401, 404, 200]
        etag = (await client.get("/round/3.pgn")).headers["ETag"]
        cached = await client.get("/round/3.pgn", headers={"If-None-Match": etag})
        assert cached.status == 304 and cached.headers["X-Content-Type-Options"] == "nosniff"


def test_the_cli_and_the_broadcaster_meet_on_one_revocations_file(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``TOUCHMOVE_ARBITERS_FILE`` outside the output directory, a token revoked by the CLI is refused."""
    asyncio.run(_one_place(tmp_path, monkeypatch))


async def _one_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tokens = tmp_path / "secrets" / "arbiters.toml"
    tokens.parent.mkdir()
    tokens.write_text(file_entry("Bob", "arbiter", "tok-bob"))
    monkeypatch.setenv(ARBITERS_FILE_ENV, str(tokens))
    out = tmp_path / "out"
    hub = Broadcaster(tournament(out, delay=0), output_dir=out, clock=ManualClock()).open()
    bob = {"Authorization": "Bearer tok-bob"}
    async with TestClient(TestServer(make_app(hub, None))) as client:
        assert (await client.post("/api/boards/1/result", json={"result": "1-0"}, headers=bob)).status == 200
        assert main(["arbiters", "revoke", str(tokens), "Bob"]) == 0
        assert (await client.post("/api/boards/1/result", json={"result": "0-1"}, headers=bob)).status == 401
    # a revocation an earlier version wrote to the output directory still holds
    (tokens.parent / "arbiters-revoked.json").unlink()
    (out / "arbiters-revoked.json").write_text(json.dumps({digest("tok-bob"): {"name": "Bob", "by": "x", "at": "y"}}))
    async with TestClient(TestServer(make_app(hub, None))) as client:
        assert (await client.post("/api/boards/1/result", json={"result": "0-1"}, headers=bob)).status == 401


def test_broker_auth_says_mqtt_viewers_see_live_play(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The delay does not reach the broker: making viewer accounts says so (docs/security.md)."""
    assert main(["broker-auth", "--out", str(tmp_path / "auth"), "--bridge", "hall-a", "--broadcaster", "arbiters",
                 "--viewer", "screens"]) == 0
    assert "viewers read every hall's topics live, also during a broadcast delay" in capsys.readouterr().out
    assert main(["broker-auth", "--out", str(tmp_path / "auth2"), "--bridge", "hall-a",
                 "--broadcaster", "arbiters"]) == 0
    assert "viewers read" not in capsys.readouterr().out  # no viewer: nothing to say
