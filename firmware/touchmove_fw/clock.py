# Device time in milliseconds since boot, modulo 2**30, and how the scan task waits.
#   Clock        - real time (the hardware; the sim at human speed)
#   ScaledClock  - real time times an integer factor (a sim demo that runs N times faster)
#   SteppedClock - virtual time that only advances when the scan task sleeps (tests: as fast as possible)
#
# Device time wraps at 2**30 ms (12.4 days) so that it is a small int on every port, for ever: reading the
# clock never allocates. Compare and add device times with diff() and add() below (time.ticks_diff and
# time.ticks_add for a period of 2**30; the ports' own ticks period is 2**30 on 32-bit boards but 2**62 on
# the 64-bit unix port, so the firmware does not use them on its own times). The wire carries the time
# unwrapped (link.Output): the host never sees the wrap.
import asyncio
import time

try:
    from micropython import const
except ImportError:  # CPython

    def const(x):
        return x


MASK = const(0x3FFFFFFF)
_HALF = const(0x20000000)

# A 32-bit port's small ints are -2**30 .. 2**30 - 1: 2**30 itself, or a + d with a near the wrap, would be a
# long int (an allocation). So every operand is masked first and no intermediate value leaves that range:
# a - b of two masked times is within it, and a + d is formed as a - (2**30 - d) (the same modulo 2**30).


def diff(a, b):
    """a - b for device times, in -2**29 .. 2**29 - 1 (like time.ticks_diff)."""
    d = ((a & MASK) - (b & MASK)) & MASK
    return d - _HALF - _HALF if d >= _HALF else d


def add(a, d):
    """Device time a plus d ms (like time.ticks_add); d may be negative."""
    return ((a & MASK) - (MASK - (d & MASK)) - 1) & MASK


class Clock:
    def __init__(self, start=0):
        self.last = time.ticks_ms()
        self.now = start & MASK

    def ms(self):
        t = time.ticks_ms()
        self.now = add(self.now, time.ticks_diff(t, self.last))
        self.last = t
        return self.now

    def sleep(self, ms):
        return asyncio.sleep_ms(ms)

    def pause(self, ms):
        """Wait ms without the event loop (halted.py's loop)."""
        time.sleep_ms(ms)


class ScaledClock(Clock):
    def __init__(self, speed, start=0):
        super().__init__(0)
        self.speed = speed
        self.base = start & MASK

    def ms(self):
        # the sim's clock (the 64-bit unix port): the product is a small int there
        return add(self.base, (Clock.ms(self) * self.speed) & MASK)

    def sleep(self, ms):
        # Round up: scanning before device time reaches the next scan would sample the timeline more often
        # than a real board does, and chatter of a few device ms would survive the debounce. At high speeds
        # the scan period in device time grows instead (10 ms at speed 10: still >= 100 Hz).
        s = self.speed
        return asyncio.sleep_ms((ms + s - 1) // s if ms > 0 else 0)


class SteppedClock:
    def __init__(self, start=0):
        self.now = start & MASK

    def ms(self):
        return self.now

    def sleep(self, ms):
        if ms > 0:
            self.now = add(self.now, ms)
        return asyncio.sleep_ms(0)

    def pause(self, ms):
        self.now = add(self.now, ms)
