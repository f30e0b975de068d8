# Device time in milliseconds since boot, and how the scan task waits.
#   Clock        - real time (the hardware; the sim at human speed)
#   ScaledClock  - real time times an integer factor (a sim demo that runs N times faster)
#   SteppedClock - virtual time that only advances when the scan task sleeps (tests: as fast as possible)
import asyncio
import time


class Clock:
    def __init__(self):
        self.last = time.ticks_ms()
        # Accumulated, so device time does not wrap with ticks_ms(). It stays a small int (no allocation)
        # for 2**30 ms, 12.4 days of uptime on a 32-bit port; after that each reading is a (harmless) long.
        self.acc = 0

    def ms(self):
        now = time.ticks_ms()
        self.acc += time.ticks_diff(now, self.last)
        self.last = now
        return self.acc

    def sleep(self, ms):
        return asyncio.sleep_ms(ms)


class ScaledClock(Clock):
    def __init__(self, speed):
        super().__init__()
        self.speed = speed

    def ms(self):
        return Clock.ms(self) * self.speed

    def sleep(self, ms):
        # Round up: scanning before device time reaches the next scan would sample the timeline more often
        # than a real board does, and chatter of a few device ms would survive the debounce. At high speeds
        # the scan period in device time grows instead (10 ms at speed 10: still >= 100 Hz).
        s = self.speed
        return asyncio.sleep_ms((ms + s - 1) // s if ms > 0 else 0)


class SteppedClock:
    def __init__(self):
        self.now = 0

    def ms(self):
        return self.now

    def sleep(self, ms):
        if ms > 0:
            self.now += ms
        return asyncio.sleep_ms(0)
