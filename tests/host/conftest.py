import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop of the test's own, set as the current one (the bridge schedules its timers on it)."""
    lp = asyncio.new_event_loop()
    asyncio.set_event_loop(lp)
    yield lp
    lp.close()
    asyncio.set_event_loop(None)
