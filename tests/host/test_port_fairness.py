"""A board flooding its port costs its own port's share (touchmove.serial.link): its lines are read a turn
at a time and a port with a backlog rests after a dear turn, so a quiet board's line beside it is handled at
once; a board with no backlog is never held back."""

from __future__ import annotations

import asyncio
import os
import time
import tty

from touchmove.serial.link import SerialLink


def _pty() -> tuple[int, str]:
    master, slave = os.openpty()
    tty.setraw(slave)
    name = os.ttyname(slave)
    os.close(slave)
    return master, name


def test_a_quiet_board_beside_a_flooding_one_is_served_at_once() -> None:
    asyncio.run(_beside_a_flood())


async def _beside_a_flood() -> None:
    loop = asyncio.get_running_loop()
    flood_fd, flood_path = _pty()
    quiet_fd, quiet_path = _pty()
    handled: dict[str, list[float]] = {"flood": [], "quiet": []}

    def on_lines(link: SerialLink, lines: list[bytes | None]) -> None:
        if link.path == flood_path:
            handled["flood"] += [time.monotonic()] * len(lines)
            time.sleep(0.005 * len(lines))        # each flood line costs the engine 5 ms (a random position)
        else:
            handled["quiet"].append(time.monotonic())

    flood = SerialLink(flood_path, 115200, on_lines, lambda *_: None)
    quiet = SerialLink(quiet_path, 115200, on_lines, lambda *_: None)
    flood.open(loop)
    quiet.open(loop)
    try:
        line = b'{"type":"heartbeat","t":1,"occ":"ffff00000000ffff"}\n'
        os.write(flood_fd, line * 200)              # 10 kB waiting: about forty turns
        await asyncio.sleep(0.02)
        sent = time.monotonic()
        os.write(quiet_fd, b'{"type":"lift","t":5,"sq":"e2"}\n')
        deadline = sent + 5
        while not handled["quiet"] and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        assert handled["quiet"], "the quiet board's line was never handled"
        waited = handled["quiet"][0] - sent
        # served within about one flood turn (256 bytes: 5 lines, 25 ms), not after a whole read of the port
        # (a pty gives up to 4 kB at once: 80 lines, 400 ms)
        assert waited < 0.1, waited
        deadline = time.monotonic() + 20              # the flood's own work, rests included: about 5 s
        while len(handled["flood"]) < 200 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert len(handled["flood"]) == 200          # nothing of the flood is lost: it waited in its port
    finally:
        flood.close()
        quiet.close()
        os.close(flood_fd)
        os.close(quiet_fd)
