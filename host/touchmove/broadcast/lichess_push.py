"""Optional push of the round PGN to a lichess broadcast round.

``POST {lichess_url}/api/broadcast/round/{round_id}/push`` with the PGN text as the body and the token
(env ``LICHESS_TOKEN``, a personal token with the ``study:write`` scope) as a bearer token. Pushes are
spaced ``interval`` seconds apart and only the latest PGN is sent; a failed push is retried with the next
change or after the interval. Tests use a local stand-in server, never the real service.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aiohttp

log = logging.getLogger(__name__)


class LichessPusher:
    def __init__(self, round_id: str, token: str, *, base_url: str = "https://lichess.org",
                 interval: float = 2.0, timeout: float = 15.0) -> None:
        if not round_id or "/" in round_id:
            raise ValueError(f"bad lichess round id {round_id!r}")
        self.url = f"{base_url.rstrip('/')}/api/broadcast/round/{round_id}/push"
        self.token = token
        self.interval = interval
        self.timeout = timeout
        self._latest: str | None = None
        self._pushed: str | None = None
        self._wake = asyncio.Event()
        self.pushes = 0
        self.failures = 0
        self.last_response: Any = None

    def update(self, pgn: str) -> None:
        """Called with each new round PGN; the push loop sends the latest one."""
        self._latest = pgn
        self._wake.set()

    async def push(self, session: aiohttp.ClientSession, pgn: str) -> bool:
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "text/plain; charset=utf-8"}
        try:
            async with session.post(self.url, data=pgn.encode("utf-8"), headers=headers,
                                    timeout=aiohttp.ClientTimeout(total=self.timeout)) as resp:
                body = await resp.text()
                if resp.status != 200:
                    self.failures += 1
                    log.warning("lichess push: HTTP %s: %s", resp.status, body[:200])
                    return False
                self.pushes += 1
                self.last_response = body
                return True
        except (aiohttp.ClientError, TimeoutError) as exc:
            self.failures += 1
            log.warning("lichess push failed: %s", exc)
            return False

    async def run(self) -> None:
        async with aiohttp.ClientSession() as session:
            while True:
                await self._wake.wait()
                self._wake.clear()
                pgn = self._latest
                if pgn is not None and pgn != self._pushed:
                    if await self.push(session, pgn):
                        self._pushed = pgn
                    else:
                        self._wake.set()  # try again after the interval
                await asyncio.sleep(self.interval)
