"""Bridges the host tests open on a journal: one opened before on the same journal is taken as crashed (its
journal lock released, as the kernel does when a process dies), so a test can "restart" the bridge."""

from __future__ import annotations

import asyncio

from touchmove.bridge import Bridge
from touchmove.clocks import LoopClock
from touchmove.config import BridgeConfig

_RUNNING: dict[str, Bridge] = {}


def open_bridge(cfg: BridgeConfig, loop: asyncio.AbstractEventLoop) -> Bridge:
    """Return a bridge on ``cfg``, opened and running on ``loop`` and reading its time (the one before it on that
    journal let go)."""
    before = _RUNNING.pop(cfg.journal, None)
    if before is not None:
        before.pipeline.journal_lock.release()
    bridge = Bridge(cfg, session="test", clock=LoopClock(loop))
    bridge.open()
    _RUNNING[cfg.journal] = bridge
    bridge.pipeline.loop = loop
    return bridge
