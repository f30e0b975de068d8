"""Optional push of the round PGN to lichess broadcast rounds, as a well-behaved API client.

``POST {lichess_url}/api/broadcast/round/{round_id}/push`` with the PGN text as the body and the token (a
personal token with the ``study:write`` scope) as a bearer token. Only the latest PGN is sent, at most
every ``interval`` seconds, and only when it changed. On failure:

- ``429``: wait what ``Retry-After`` says (seconds or an HTTP date), at least the backoff;
- ``5xx`` and network errors: exponential backoff with jitter (``backoff_start`` doubling up to
  ``backoff_max``, each wait drawn between half and the whole of it);
- ``401``/``403``: stop and show "token refused" until the token changes (a new value in the token file,
  or one given by the arbiter); no request is sent with a refused token;
- other ``4xx``: shown, retried with the backoff (a round id that does not exist yet, a bad PGN).

A ``200`` lists every game with its moves or its error: the errors are logged (each once) and shown.
A round above lichess's per-round game limit is pushed to several lichess rounds, one per board range
(:class:`~touchmove.broadcast.tournament.LichessTarget`). Tests use a local stand-in, never lichess.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import email.utils
import json
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import aiohttp

from touchmove import __version__
from touchmove.broadcast.tournament import LichessTarget

log = logging.getLogger(__name__)

BACKOFF_START = 2.0
BACKOFF_MAX = 300.0
#: How often a refused token is looked at again (the token file re-read).
TOKEN_RECHECK = 5.0
GAME_ERRORS_SHOWN = 50
#: Who is pushing, as lichess asks API clients to say.
USER_AGENT = f"touchmove/{__version__} (broadcast push; occupancy chessboards)"


class PushState(StrEnum):
    IDLE = "idle"  #: nothing pushed yet
    OK = "ok"  #: the latest PGN is on lichess
    PENDING = "pending"  #: a newer PGN waits for the interval
    RETRYING = "retrying"  #: the last try failed; next_try says when the next one is
    TOKEN_REFUSED = "token refused"  #: 401/403: nothing is sent until the token changes


class TokenSource:
    """The lichess token: given (environment) or read from a file (re-read, so replacing it resumes)."""

    def __init__(self, token: str | None = None, path: Path | None = None) -> None:
        self._token = token
        self.path = path

    def current(self) -> str | None:
        if self.path is not None:
            with contextlib.suppress(OSError):
                text = self.path.read_text(encoding="utf-8").strip()
                if text:
                    return text
        return self._token

    def set(self, token: str) -> None:
        """A token given by the arbiter: it replaces the environment's and the file's from now on."""
        self._token = token
        self.path = None


def retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta seconds or an HTTP date), None if absent/bad."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return max(0.0, when.timestamp() - now)


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass
class Outcome:
    ok: bool
    status: int | None = None
    wait: float | None = None  #: Retry-After
    error: str | None = None
    refused: bool = False


class LichessPusher:
    """Pushes one lichess round (a range of the round's boards)."""

    def __init__(self, round_id: str, token: str | TokenSource, *, base_url: str = "https://lichess.org",
                 interval: float = 2.0, timeout: float = 15.0, boards: range | None = None,
                 source: Callable[[], str] | None = None, clock: Callable[[], float] = time.time,
                 jitter: Callable[[], float] = random.random, backoff_start: float = BACKOFF_START,
                 backoff_max: float = BACKOFF_MAX) -> None:
        if not round_id or not round_id.isalnum():
            raise ValueError(f"bad lichess round id {round_id!r}")
        self.round_id = round_id
        self.url = f"{base_url.rstrip('/')}/api/broadcast/round/{round_id}/push"
        self.tokens = token if isinstance(token, TokenSource) else TokenSource(token)
        self.interval = interval
        self.timeout = timeout
        self.boards = boards
        self.source = source
        self.clock = clock
        self.jitter = jitter
        self.backoff_start = backoff_start
        self.backoff_max = backoff_max
        self._backoff = backoff_start
        self._latest: str | None = None
        self._pushed: str | None = None
        self._wake = asyncio.Event()
        self._refused_token: str | None = None
        self.state = PushState.IDLE
        self.pushes = 0
        self.failures = 0
        self.last_response: Any = None
        self.last_success: float | None = None
        self.last_error: str | None = None
        self.last_error_at: float | None = None
        self.next_try: float | None = None
        self.game_errors: list[dict[str, Any]] = []
        self._errors_logged: set[tuple[str, str]] = set()

    @property
    def token(self) -> str | None:
        return self.tokens.current()

    def update(self, pgn: str | None = None) -> None:
        """A new round PGN (or, with a ``source``, a change to read from it): the push loop sends it."""
        if pgn is not None:
            self._latest = pgn
        self._wake.set()

    def set_token(self, token: str) -> None:
        self.tokens.set(token)
        self._wake.set()

    def status(self) -> dict[str, Any]:
        """What the dashboard and ``/status.json`` show of this push."""
        b = self.boards
        return {
            "round_id": self.round_id, "url": self.url,
            "boards": None if b is None else f"{b.start}-{b.stop - 1}",
            "state": self.state.value, "pushes": self.pushes, "failures": self.failures,
            "last_success": _iso(self.last_success), "last_error": self.last_error,
            "last_error_at": _iso(self.last_error_at), "next_try": _iso(self.next_try),
            "game_errors": self.game_errors[:GAME_ERRORS_SHOWN],
        }

    def _pgn(self) -> str | None:
        return self.source() if self.source is not None else self._latest

    async def push(self, session: aiohttp.ClientSession, pgn: str) -> Outcome:
        """One POST; the outcome says what to do next (nothing is retried here)."""
        token = self.token
        if not token:
            return Outcome(False, error="no lichess token", refused=True)
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "text/plain; charset=utf-8",
                   "User-Agent": USER_AGENT}
        try:
            async with session.post(self.url, data=pgn.encode("utf-8"), headers=headers,
                                    timeout=aiohttp.ClientTimeout(total=self.timeout)) as resp:
                body = await resp.text()
                if resp.status == 200:
                    self._read_games(body)
                    return Outcome(True, 200)
                short = " ".join(body.split())[:200]
                if resp.status in (401, 403):
                    return Outcome(False, resp.status, error=f"token refused (HTTP {resp.status}) {short}".strip(),
                                   refused=True)
                return Outcome(False, resp.status, wait=retry_after(resp.headers.get("Retry-After"), self.clock()),
                               error=f"HTTP {resp.status} {short}".strip())
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            return Outcome(False, error=f"network: {exc or type(exc).__name__}")

    def _read_games(self, body: str) -> None:
        """The per-game results of a 200: keep (and log once each) the games lichess refused."""
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        self.last_response = data if data is not None else body
        errors: list[dict[str, Any]] = []
        games = data.get("games") if isinstance(data, dict) else None
        for i, game in enumerate(games if isinstance(games, list) else []):
            if not isinstance(game, dict) or not game.get("error"):
                continue
            raw_tags = game.get("tags")
            tags: dict[str, Any] = raw_tags if isinstance(raw_tags, dict) else {}
            entry: dict[str, Any] = {"index": i + 1, "round": tags.get("Round"), "white": tags.get("White"),
                                     "black": tags.get("Black"), "error": str(game["error"])[:300]}
            errors.append(entry)
            key = (str(entry["round"]), entry["error"])
            if key not in self._errors_logged:
                self._errors_logged.add(key)
                log.warning("lichess round %s: game %s (%s - %s) refused: %s", self.round_id, entry["round"],
                            entry["white"], entry["black"], entry["error"])
        self.game_errors = errors

    def _failed(self, outcome: Outcome) -> float:
        """Note a failure; return how long to wait before the next try."""
        self.failures += 1
        self.last_error, self.last_error_at = outcome.error, self.clock()
        if outcome.refused:
            if self.state is not PushState.TOKEN_REFUSED:
                log.error("lichess round %s: %s: nothing is pushed until the token changes", self.round_id,
                          outcome.error)
            self.state = PushState.TOKEN_REFUSED
            self._refused_token = self.token
            self.next_try = None
            return TOKEN_RECHECK
        wait = self._backoff * (0.5 + 0.5 * self.jitter())
        if outcome.wait is not None:
            wait = max(wait, outcome.wait)
        self._backoff = min(self._backoff * 2, self.backoff_max)
        self.state = PushState.RETRYING
        self.next_try = self.clock() + wait
        log.warning("lichess round %s: %s; next try in %.1f s", self.round_id, outcome.error, wait)
        return wait

    async def _sleep(self, seconds: float, *, wakeable: bool) -> None:
        if not wakeable:
            await asyncio.sleep(seconds)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), seconds)

    async def step(self, session: aiohttp.ClientSession) -> float | None:
        """Push if there is something new; return how long to wait before looking again (None: until
        woken by a change)."""
        if self.state is PushState.TOKEN_REFUSED:
            if self.token == self._refused_token:
                return TOKEN_RECHECK
            log.info("lichess round %s: the token changed: pushing again", self.round_id)
            self.state, self._backoff = PushState.PENDING, self.backoff_start
        pgn = self._pgn()
        if pgn is None or pgn == self._pushed:
            return None
        outcome = await self.push(session, pgn)
        if not outcome.ok:
            return self._failed(outcome)
        self._pushed = pgn
        self.pushes += 1
        self.last_success, self.next_try = self.clock(), None
        self._backoff = self.backoff_start
        self.state = PushState.OK
        return self.interval

    async def run(self) -> None:
        async with aiohttp.ClientSession() as session:
            while True:
                self._wake.clear()
                wait = await self.step(session)
                if wait is None:
                    await self._wake.wait()
                elif self.state is PushState.OK:
                    await asyncio.sleep(wait)  # at most one push per interval, whatever changes
                else:
                    # a failure waits its time; a refused token is looked at again now and then
                    await self._sleep(wait, wakeable=self.state is PushState.TOKEN_REFUSED)
                if self.state is PushState.OK and self._pgn() != self._pushed:
                    self.state = PushState.PENDING


class LichessPush:
    """The pushes of the current round: one :class:`LichessPusher` per lichess round of it, rebuilt when
    the round changes."""

    def __init__(self, targets: Callable[[int], tuple[LichessTarget, ...]], render: Callable[[range], str],
                 round_number: Callable[[], int], tokens: TokenSource, *, base_url: str, interval: float,
                 **kwargs: Any) -> None:
        self.targets = targets
        self.render = render
        self.round_number = round_number
        self.tokens = tokens
        self.base_url = base_url
        self.interval = interval
        self.kwargs = kwargs
        self.pushers: list[LichessPusher] = []
        self._round: int | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._changed = asyncio.Event()

    def _build(self) -> None:
        number = self.round_number()
        if number == self._round:
            return
        for task in self._tasks:
            task.cancel()
        self._tasks = []
        self._round = number
        self.pushers = [
            LichessPusher(t.round_id, self.tokens, base_url=self.base_url, interval=self.interval, boards=t.boards,
                          source=self._source(t.boards), **self.kwargs)
            for t in self.targets(number)
        ]

    def _source(self, boards: range) -> Callable[[], str]:
        return lambda: self.render(boards)

    @property
    def url(self) -> str:
        return ", ".join(p.url for p in self.pushers) or "(no lichess round for this round)"

    def update(self, _pgn: str | None = None) -> None:
        """The public PGN changed (a write): every pusher reads its boards again."""
        self._changed.set()

    def set_token(self, token: str) -> None:
        self.tokens.set(token)
        for p in self.pushers:
            p.update()

    def status(self) -> dict[str, Any]:
        states = [p.status() for p in self.pushers]
        order = ["off", PushState.OK.value, "game errors", PushState.PENDING.value, PushState.RETRYING.value,
                 PushState.TOKEN_REFUSED.value]
        worst = "off"
        for st in states:
            state = "game errors" if st["state"] == PushState.OK.value and st["game_errors"] else st["state"]
            if state in order and order.index(state) > order.index(worst):
                worst = state
        return {"round": self._round, "state": worst, "targets": states}

    async def run(self) -> None:
        try:
            while True:
                self._build()
                if not self._tasks:
                    self._tasks = [asyncio.create_task(p.run(), name=f"lichess-{p.round_id}")
                                   for p in self.pushers]
                for p in self.pushers:
                    p.update()
                await self._changed.wait()
                self._changed.clear()
        finally:
            for task in self._tasks:
                task.cancel()
            if self._tasks:
                await asyncio.wait(self._tasks, timeout=2.0)
