"""``touchmove doctor --tournament`` and the lichess push (issue 38): no token is a failure, lichess out of reach
is a failure that says the push needs internet, a token lichess does not know or without the push's scope is a
failure, and the rehearsal's stand-in is accepted."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiohttp import web

from touchmove.broadcast.lichess_standin import make_app
from touchmove.broadcast.tournament import LICHESS_TOKEN_ENV, load_tournament
from touchmove.doctor import Report, check_lichess
from touchmove.sim.local_broker import free_port


def tournament(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "tournament.toml"
    path.write_text(f'event = "E"\nround = 1\n[broadcast]\nlichess_round = "abcd1234"\nlichess_url = "{url}"\n'
                    '[[rounds]]\nnumber = 1\nboards = [{ board_id = "b1", white = "A", black = "B" }]\n')
    return path


def lichess_lines(path: Path, token: str | None, monkeypatch: pytest.MonkeyPatch,
                  answer: web.Application | None = None) -> list[tuple[str, str, str]]:
    if token is None:
        monkeypatch.delenv(LICHESS_TOKEN_ENV, raising=False)
    else:
        monkeypatch.setenv(LICHESS_TOKEN_ENV, token)
    report = Report()

    async def main() -> None:
        runner = None
        if answer is not None:
            runner = web.AppRunner(answer)
            await runner.setup()
            url = load_tournament(path).settings.lichess_url
            await web.TCPSite(runner, "127.0.0.1", int(url.rsplit(":", 1)[1])).start()
        try:
            await check_lichess(report, load_tournament(path), 3.0)
        finally:
            if runner is not None:
                await runner.cleanup()

    asyncio.run(main())
    return report.lines


def test_no_token_is_a_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    [(level, what, fix)] = lichess_lines(tournament(tmp_path, "http://127.0.0.1:9"), None, monkeypatch)
    assert level == "FAIL" and "there is no token" in what and LICHESS_TOKEN_ENV in fix


def test_lichess_out_of_reach_says_the_push_needs_internet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tournament(tmp_path, f"http://127.0.0.1:{free_port()}")
    [(level, what, fix)] = lichess_lines(path, "lip_x", monkeypatch)
    assert level == "FAIL" and "cannot be reached" in what and "internet" in fix


def test_the_rehearsal_stand_in_is_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tournament(tmp_path, f"http://127.0.0.1:{free_port()}")
    [(level, what, _), (level2, what2, _)] = lichess_lines(path, "rehearsal", monkeypatch, make_app(tmp_path))
    assert level == "ok" and "study:write" in what and "abcd1234" in what
    assert level2 == "ok" and what2 == "lichess: round abcd1234 is lichess stand-in, round abcd1234"


@pytest.mark.parametrize("known, said", [(None, "unknown to"), ({"scopes": "study:read", "userId": "a"}, "lacks")])
def test_a_token_lichess_refuses_is_a_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              known: dict[str, str] | None, said: str) -> None:
    async def token_test(request: web.Request) -> web.Response:
        return web.json_response({(await request.text()): known})

    async def no_round(request: web.Request) -> web.Response:
        return web.json_response({"error": "Not found"}, status=404)

    app = web.Application()
    app.router.add_post("/api/token/test", token_test)
    app.router.add_get("/api/broadcast/{a}/{b}/{id}", no_round)
    path = tournament(tmp_path, f"http://127.0.0.1:{free_port()}")
    [(level, what, fix), (level2, what2, fix2)] = lichess_lines(path, "lip_old", monkeypatch, app)
    assert level == "FAIL" and said in what and "study:write" in fix
    assert level2 == "FAIL" and "has no broadcast round abcd1234" in what2 and "8 characters" in fix2
