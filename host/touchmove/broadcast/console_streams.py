"""The consoles' live event streams (``GET /api/stream``): one bounded queue per open stream.

Board changes are gathered for :data:`NOTIFY_GATHER_S` (a move comes as a move event, a clock event and a
state) and sent as one ``board`` update per changed board; the pictures of boards whose position changed
follow as ``svg`` updates, rendered in a process pool when there is one, and only while a stream wants them
(the console draws its own boards: ``?svg=0``). A stream that does not read is dropped (it reconnects).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from touchmove.broadcast.board_svg import render_many
from touchmove.broadcast.board_view import BoardView

LISTENER_QUEUE = 2000
SVG_BATCH = 16
#: How long the streams gather changes before sending (one update per board, one write per stream).
NOTIFY_GATHER_S = 0.025

Update = tuple[str, dict[str, Any]]


class ConsoleStreams:
    """Every open stream, and what is waiting to be sent to them; ``boards()`` gives the round's boards."""

    def __init__(self, boards: Callable[[], Mapping[int, BoardView]]) -> None:
        self.boards = boards
        self.listeners: set[asyncio.Queue[Update]] = set()
        self._no_svg: set[asyncio.Queue[Update]] = set()
        self._pending: dict[int, bool] = {}
        self._pending_event = asyncio.Event()
        self._svg_pending: set[int] = set()
        self._svg_event = asyncio.Event()
        #: Where pictures are rendered (a process pool set by the service); None: in the event loop.
        self.svg_executor: concurrent.futures.Executor | None = None

    def listen(self, *, svg: bool = True) -> asyncio.Queue[Update]:
        """A queue of updates for one stream; ``svg=False``: without pictures (the console draws its own)."""
        queue: asyncio.Queue[Update] = asyncio.Queue(LISTENER_QUEUE)
        self.listeners.add(queue)
        if not svg:
            self._no_svg.add(queue)
        return queue

    def unlisten(self, queue: asyncio.Queue[Update]) -> None:
        self.listeners.discard(queue)
        self._no_svg.discard(queue)

    def close(self) -> None:
        """End every stream (server shutdown)."""
        for queue in list(self.listeners):
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(("overflow", {}))
        self.listeners.clear()

    def notify(self, kind: str, data: dict[str, Any]) -> None:
        """Send one update to every stream (``svg`` only to those that want pictures)."""
        for queue in list(self.listeners):
            if kind == "svg" and queue in self._no_svg:
                continue
            try:
                queue.put_nowait((kind, data))
            except asyncio.QueueFull:  # a client that does not read: drop it, it reconnects
                self.listeners.discard(queue)
                with contextlib.suppress(asyncio.QueueFull):
                    queue.put_nowait(("overflow", {}))

    def board_changed(self, number: int, position_changed: bool) -> None:
        """Board ``number`` changed: one ``board`` update at the next flush (its picture too, if it moved)."""
        if self.listeners:
            self._pending[number] = self._pending.get(number, False) or position_changed
            self._pending_event.set()

    def want_pictures(self, numbers: Iterable[int]) -> None:
        """Render and send these boards' pictures (those not rendered yet, for a new stream's snapshot)."""
        self._svg_pending.update(numbers)
        if self._svg_pending:
            self._svg_event.set()

    def flush(self) -> None:
        """Send one ``board`` update per changed board; its picture follows as an ``svg`` update."""
        pending, self._pending = self._pending, {}
        boards = self.boards()
        for number, position_changed in pending.items():
            view = boards.get(number)
            if view is None:
                continue  # a board of the round before a switch
            self.notify("board", view.to_json())
            if position_changed:
                self._svg_pending.add(number)
        if self._svg_pending:
            self._svg_event.set()

    async def run_notifier(self) -> None:
        """Feed the streams: what changed while messages were being handled, once."""
        while True:
            await self._pending_event.wait()
            # a move comes as several messages (move, clock, state): gather them, one update per board
            await asyncio.sleep(NOTIFY_GATHER_S)
            self._pending_event.clear()
            self.flush()

    async def run_svg_renderer(self) -> None:
        """Render the pictures of boards whose position changed (in ``svg_executor`` when there is one,
        so that the event loop keeps handling messages) and send them as ``svg`` updates."""
        loop = asyncio.get_running_loop()
        while True:
            await self._svg_event.wait()
            self._svg_event.clear()
            numbers, self._svg_pending = sorted(self._svg_pending), set()
            if not self.listeners - self._no_svg:
                continue
            boards = self.boards()
            jobs: list[tuple[int, int, tuple[str, bool, str | None]]] = []
            for number in numbers:
                view = boards.get(number)
                if view is None:
                    continue
                cached = view.cached_svg()
                if cached is not None:
                    self.notify("svg", {"board": number, "ply": view.game.ply, "version": view.game.version,
                                        "svg": cached})
                else:
                    jobs.append((number, view.game.version, view.svg_args()))
            for start in range(0, len(jobs), SVG_BATCH):
                batch = jobs[start:start + SVG_BATCH]
                args = [job[2] for job in batch]
                if self.svg_executor is not None:
                    svgs = await loop.run_in_executor(self.svg_executor, render_many, args)
                else:
                    svgs = render_many(args)
                    await asyncio.sleep(0)
                boards = self.boards()
                for (number, version, _), svg in zip(batch, svgs, strict=True):
                    view = boards.get(number)
                    if view is None or view.game.version != version:
                        continue  # moved on meanwhile: it is pending again
                    view.keep_svg(version, svg)
                    self.notify("svg", {"board": number, "ply": view.game.ply, "version": version, "svg": svg})
