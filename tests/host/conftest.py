import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import looptime
import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def loop(request: pytest.FixtureRequest) -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop of the test's own, set as the current one (the bridge schedules its timers on it).

    Its time is virtual: when nothing is ready the loop jumps to its next timer, so a settle timer or a 2 s
    retry costs no wall time, and the bridge reads the same time (``LoopClock``). A test marked ``wall_time``
    (real I/O it waits for beside the loop) gets a loop on the wall clock."""
    if request.node.get_closest_marker("wall_time"):
        lp = asyncio.new_event_loop()
    else:
        lp = looptime.new_event_loop(start=1000.0)
    asyncio.set_event_loop(lp)
    yield lp
    lp.close()
    asyncio.set_event_loop(None)
