"""The running broadcaster: MQTT consumer, PGN writer, web server and the optional lichess push together."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import multiprocessing
import os
from pathlib import Path
from types import TracebackType
from typing import Any

from aiohttp import web

from touchmove.broadcast.board_view import BoardView
from touchmove.broadcast.broadcaster import ActionError, Broadcaster
from touchmove.broadcast.consumer import BridgeFeeds, check_brokers
from touchmove.broadcast.lichess_push import LichessPush, TokenSource
from touchmove.broadcast.server import make_app
from touchmove.broadcast.tournament import LICHESS_TOKEN_ENV, Tournament, TournamentError
from touchmove.clocks import SYSTEM_CLOCK, Clock


def check_output_dir(path: Path) -> None:
    """Raise TournamentError (one line) unless ``path`` is a directory this process can write files in."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".touchmove-write-test-{os.getpid()}"
        probe.write_text("ok\n")
        probe.unlink()
    except OSError as exc:
        raise TournamentError(f"output_dir {path} is not writable: {exc.strerror or exc}") from None

log = logging.getLogger(__name__)

#: An assignment the bridge has not answered is sent again this often (s), up to ASSIGN_TRIES times.
ASSIGN_AGAIN_S = 3.0
ASSIGN_TRIES = 20


class BroadcastService:
    """``async with BroadcastService(t) as svc:`` runs everything; ``svc.url`` is the dashboard.

    Making one touches nothing: :meth:`start` checks the output directory, the brokers' TLS files and the
    lichess token (a :class:`TournamentError` of one line, before anything is served), then opens the round.
    """

    def __init__(self, tournament: Tournament, *, host: str | None = None, port: int | None = None,
                 token: str | None = None, lichess_token: str | None = None, svg_workers: int = 1,
                 clock: Clock = SYSTEM_CLOCK, take_retained: bool = False) -> None:
        s = tournament.settings
        self.tournament = tournament
        self.host = host if host is not None else s.host
        self.port = port if port is not None else s.port
        self.token = token if token is not None else s.token
        self.hub = Broadcaster(tournament, clock=clock)  # reads nothing yet: start() opens the round
        self.hub.storage.take_retained = take_retained
        self.link = BridgeFeeds(self.hub, tournament.brokers)
        self.hub.ingest.backlog = self.link.backlog
        self.hub.actions.publish = self.link.publish
        self.pusher: LichessPush | None = None
        self._lichess_tokens: TokenSource | None = None
        if any(r.lichess for r in tournament.rounds.values()):
            self._lichess_tokens = TokenSource(lichess_token or os.environ.get(LICHESS_TOKEN_ENV),
                                               s.lichess_token_file)
            self.pusher = LichessPush(tournament.lichess_targets,
                                      lambda boards: self.hub.outputs.public_pgn(boards=boards),
                                      lambda: self.hub.storage.round.number, self._lichess_tokens,
                                      base_url=s.lichess_url, interval=s.lichess_interval)
            self.hub.outputs.on_pgn(self.pusher.update)
            self.hub.push_status = self.pusher.status
            self.hub.set_lichess_token = self.pusher.set_token
        self.svg_workers = svg_workers
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._runner: web.AppRunner | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._assigned: set[tuple[int, int]] = set()      # (round, board) whose names the bridge took
        self._assigning: set[tuple[int, int]] = set()     # (round, board) being sent until the bridge answers

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "", "::") else self.host
        return f"http://{host}:{self.port}"

    @property
    def pgn_url(self) -> str:
        return f"{self.url}/round/{self.hub.storage.round.number}.pgn"

    def check_settings(self) -> None:
        """Raise :class:`TournamentError` (one line) for a setting that could only fail once serving: an output
        directory that cannot be written (made if missing), a broker's topic or TLS file, no lichess token."""
        check_output_dir(self.tournament.settings.output_dir)
        check_brokers(self.tournament.brokers)  # before serving: a bad setting never leaves a page without MQTT
        if self._lichess_tokens is not None and not self._lichess_tokens.current():
            raise TournamentError(f"a lichess round is set but there is no token: set {LICHESS_TOKEN_ENV} "
                                  "or [broadcast] lichess_token_file")

    async def start(self, *, wait_mqtt: float | None = 10.0) -> BroadcastService:
        self.check_settings()
        try:
            self.hub.open()
        except ValueError as exc:  # a round state file that cannot be read
            raise TournamentError(str(exc)) from None
        self.hub.outputs.write_now()
        if self.svg_workers > 0:
            self._pool = concurrent.futures.ProcessPoolExecutor(
                self.svg_workers, mp_context=multiprocessing.get_context("spawn"))
            self.hub.streams.svg_executor = self._pool
        self._runner = web.AppRunner(make_app(self.hub, self.token), shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        try:
            await site.start()
        except OSError as exc:
            await self._runner.cleanup()
            self._runner = None
            if self._pool is not None:
                self.hub.streams.svg_executor = None
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = None
            raise TournamentError(f"cannot listen on {self.host}:{self.port}: {exc.strerror or exc}") from None
        if self.port == 0:
            self.port = int(self._runner.addresses[0][1])
        self._tasks.append(asyncio.create_task(self.link.run(), name="mqtt"))
        self._tasks.append(asyncio.create_task(self.hub.outputs.run_writer(), name="pgn-writer"))
        self._tasks.append(asyncio.create_task(self.hub.ingest.run_kings(), name="kings-in-the-centre"))
        self._tasks.append(asyncio.create_task(self.hub.streams.run_notifier(), name="dashboard-notifier"))
        self._tasks.append(asyncio.create_task(self.hub.streams.run_svg_renderer(), name="svg-renderer"))
        if self.pusher is not None:
            self._tasks.append(asyncio.create_task(self.pusher.run(), name="lichess-push"))
        if any(r.start is not None for r in self.tournament.rounds.values()):
            self._tasks.append(asyncio.create_task(self.hub.run_schedule(), name="round-schedule"))
        if self.tournament.settings.assign:
            self._tasks.append(asyncio.create_task(self._assign_all(), name="assign"))
            self.hub.on_round(lambda _n: self._tasks.append(
                asyncio.create_task(self._assign_all(), name="assign")))
            # a board whose bridge starts after the broadcaster (or comes back) gets its names then
            self.hub.ingest.online_listeners.append(lambda view: self._tasks.append(
                asyncio.create_task(self._assign_one(view.pairing.board), name="assign")))
            self.hub.ingest.response_listeners.append(self._assign_answered)
        if wait_mqtt:
            await self.link.wait_ready(wait_mqtt)
        log.info("broadcast of round %s: %s (PGN %s)", self.hub.storage.round.number, self.url, self.pgn_url)
        return self

    async def _assign_all(self) -> None:
        """Tell every bridge who plays on its boards (``assign``), once the brokers are connected."""
        while True:
            try:
                await self.link.wait_ready(60.0)
                break
            except TimeoutError:
                continue
        for number in sorted(self.hub.storage.by_number):
            await self._assign_one(number, quiet=True)

    async def _assign_one(self, number: int, *, quiet: bool = False) -> None:
        """Send board ``number``'s names to its bridge until the bridge answers that it took them (this round's),
        again every :data:`ASSIGN_AGAIN_S` while the board is online: a command published while the bridge's
        command subscription is still being made (its board already online) reaches no one."""
        key = (self.hub.storage.round.number, number)
        if key in self._assigning:
            return
        self._assigning.add(key)
        try:
            for _ in range(ASSIGN_TRIES):
                if key in self._assigned or key[0] != self.hub.storage.round.number:
                    return
                try:
                    await self.hub.actions.assign(number)
                except ActionError as exc:
                    (log.info if quiet else log.warning)("assign board %s: %s", number, exc)
                    return
                if not self.hub.storage.by_number[number].online:
                    return       # a board not online yet is assigned again when its bridge says it is
                await asyncio.sleep(ASSIGN_AGAIN_S)
            log.warning("assign board %s: its bridge did not answer %d assignments", number, ASSIGN_TRIES)
        finally:
            self._assigning.discard(key)

    def _assign_answered(self, view: BoardView, payload: dict[str, Any]) -> None:
        """Note a bridge's answer to ``assign``: the names of this round's board are taken."""
        if payload.get("command") == "assign" and payload.get("status") == "ok":
            self._assigned.add((self.hub.storage.round.number, view.pairing.board))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            _, stuck = await asyncio.wait(self._tasks, timeout=5.0)
            for task in stuck:
                log.warning("task %s did not stop within 5 s", task.get_name())
        self._tasks.clear()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._pool is not None:
            self.hub.streams.svg_executor = None
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self.hub.opened:  # a round that could not be opened is left as it is on disk
            with contextlib.suppress(OSError):
                self.hub.storage.save_state()
            with contextlib.suppress(OSError):
                self.hub.outputs.write_now()
            self.hub.storage.close_delay_journal()

    async def __aenter__(self) -> BroadcastService:
        return await self.start()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()
