"""A board's session in the bridge: its engine, where it is in the journal and MQTT streams, and its time.

Device time: the engine has no wall clock. A board's time is the device's ``t`` plus an offset that keeps it
monotonic across reboots; between records it is estimated as the last record's time plus the host time elapsed
since it arrived, times the board's clock rate: 1 on a real board, N on a simulation that says in its ``hello``
that it runs N times faster (``"rate": N``). The rate is never guessed from when lines arrive: lines read late
and then quickly (the host catching up after a stall) would make a real board look fast, and its settle
timers would then fire before the board's time reached them.
A device clock that jumps within one boot (backwards, or implausibly far forwards) is logged and the board's
time goes on from the host's estimate instead.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass, field

from touchmove.bridge.flicker import SquareFlicker
from touchmove.rules import Engine
from touchmove.serial.link import SerialLink

log = logging.getLogger("touchmove.bridge")

#: A device clock running ahead of the host's estimate by more than this (ms) within a boot is a jump.
MAX_FORWARD_JUMP_MS = 3_600_000


@dataclass(eq=False)
class BoardSession:
    board: str
    engine: Engine
    boot: str | None = None
    last_seq: int | None = None
    t_offset: int = 0
    last_t: int = 0                      # the latest board time fed to the engine (record or advance)
    arrival_t: int = 0                   # board time of the latest record ...
    arrival_host: float = 0.0            # ... and the host's monotonic time when it arrived
    rate: float = 1.0                    # device ms per host ms: 1, or what a sped-up simulation's hello says
    device_t: int | None = None          # the latest device time of this boot (None: not seen since start)
    since_checkpoint: int = 0            # journal entries since the last checkpoint
    event_seq: int = 0                   # events produced (and journaled)
    queued_seq: int = 0                  # events handed to MQTT
    published: int = 0                   # events acknowledged by the broker
    published_saved: int = 0
    backlog: deque[tuple[int, bytes]] = field(default_factory=deque)
    headers: dict[str, str] = field(default_factory=dict)
    link: SerialLink | None = None
    timer: asyncio.TimerHandle | None = None
    last_snapshot_request: float = 0.0
    dirty: bool = False                  # board row needs saving
    firmware: str | None = None          # the ``fw`` of the board's latest hello (name and version)
    lost_from: int = 0                   # seqs lost_from..lost_upto were published before a crash but never
    lost_upto: int = -1                  # journaled (bridge/seq_floor.py): the stream skips them
    flicker: SquareFlicker = field(default_factory=SquareFlicker)   # squares changing faster than any hand

    @property
    def published_unjournaled(self) -> bool:
        """Whether events of this board were published but never journaled (a crash while the journal could not
        write): the broker's retained PGN then has plies the journal lacks."""
        return self.lost_upto >= self.lost_from

    def now(self, host_now: float) -> int:
        """Estimate the board's current device time when the host's monotonic clock reads ``host_now``."""
        if not self.arrival_host:
            return self.last_t
        est = self.arrival_t + int((host_now - self.arrival_host) * 1000 * self.rate)
        return max(est, self.last_t)

    def board_time(self, device_t: int, now: float) -> tuple[int, bool, bool]:
        """Return the board time of a record stamped ``device_t`` by the board's current boot, whether the
        device clock jumped, and whether the offset changed (the board's row is to be saved).

        Device time never runs backwards within a boot, and never runs ahead of the host's clock by more than
        :data:`MAX_FORWARD_JUMP_MS`: a clock that does either (a firmware fault, a clock set while running)
        is logged, and the board's time goes on from the host's estimate (board time stays monotonic). A line
        stamped before the board time a settle timer already reached (it arrived late) moves the offset on
        by the overlap, so the lines keep their spacing.
        """
        last = self.device_t
        jump = None
        changed = False
        if last is not None and device_t < last:
            jump = f"ran backwards by {last - device_t} ms"
        elif last is not None and self.arrival_host:
            expected = (now - self.arrival_host) * 1000 * max(self.rate, 1.0)
            if device_t - last > expected + MAX_FORWARD_JUMP_MS:
                jump = f"jumped {device_t - last} ms ahead in {expected / 1000:.1f} s"
        self.device_t = device_t
        if jump is not None:
            estimate = self.now(now)
            log.warning("board %s: device time %s within boot %s; board time goes on from %d (the host's "
                        "estimate)", self.board, jump, self.boot, estimate)
            self.t_offset = estimate - device_t
            changed = True
        board_t = device_t + self.t_offset
        if board_t < self.last_t:
            # Stamped before a timer's advance but arriving after it (a late line): shift this boot's offset
            # rather than pile it and the lines behind it onto one time, which would read as chatter.
            self.t_offset += self.last_t - board_t
            board_t = self.last_t
            changed = True
        return board_t, jump is not None, changed
