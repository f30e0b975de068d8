# The scan step: read the sensors, debounce, queue the changes. Runs 100+ times a second and allocates
# nothing (proved by tests/firmware under micropython.heap_lock()): every buffer is made in __init__, the
# event queue is a preallocated ring, and the loop does only small-int arithmetic and indexing.
try:
    from micropython import const
except ImportError:  # CPython

    def const(x):
        return x


from .clock import add, diff
from .debounce import Debouncer
from .evqueue import BUTTON0, STATE

_NBYTES = const(9)  # 8 bytes for the 64 squares (wiring order), 1 byte for up to 8 buttons


class Scanner:
    """``driver.read(buf)`` fills buf[0:8] with raw sensor bits in wiring order (input 8k + b = bit b of
    byte k); ``buttons.read()`` returns a bit mask of pressed buttons (or ``buttons`` is None).
    ``smap`` (bytearray 64) maps wiring order to squares; ``active_low`` inverts the sensor bits
    (reed switches to GND with pull-ups read 0 when a piece is on them)."""

    def __init__(self, driver, smap, queue, buttons=None, active_low=False, n=3, ms=0, heartbeat_ms=1000):
        self.driver = driver
        self.buttons = buttons
        self.smap = smap
        self.queue = queue
        self.invert = 0xFF if active_low else 0
        self.raw = bytearray(_NBYTES)
        self.view = memoryview(self.raw)[0:8]  # what drivers fill: exactly 8 bytes (64 SPI clocks)
        self.deb = Debouncer(_NBYTES, self._changed, n, ms)
        self.heartbeat_ms = heartbeat_ms
        self.next_heartbeat = heartbeat_ms
        self.heartbeat_due = False
        self.heartbeat_t = 0  # device time of the scan that made it due
        self.scans = 0  # the supervisor feeds the watchdog only while this moves
        self.ranks = bytearray(8)  # square-order occupancy for snapshots (filled by occupancy())

    def _sample(self):
        raw = self.raw
        self.driver.read(self.view)
        inv = self.invert
        if inv:
            for k in range(8):
                raw[k] ^= inv
        b = self.buttons
        raw[8] = b.read() if b is not None else 0

    def prime(self, t):
        """First scan at boot: take the board as it is, report nothing."""
        self._sample()
        self.deb.reset(self.raw)
        self.next_heartbeat = add(t, self.heartbeat_ms)

    def scan(self, t):
        """One scan at device time ``t`` (ms, modulo 2**30). Zero allocation."""
        self._sample()
        self.deb.update(self.raw, t)
        self.scans = (self.scans + 1) & 0x3FFFFFFF  # wraps: stays a small int
        if diff(t, self.next_heartbeat) >= 0:
            self.heartbeat_due = True
            self.heartbeat_t = t
            self.next_heartbeat = add(self.next_heartbeat, self.heartbeat_ms)
            if diff(self.next_heartbeat, t) <= 0:  # fell far behind (stalled loop): don't burst heartbeats
                self.next_heartbeat = add(t, self.heartbeat_ms)

    def _changed(self, j, state, t):
        if j < 64:
            self.queue.push(self.smap[j] | (STATE if state else 0), t)
        elif state:  # buttons report presses only
            self.queue.push((BUTTON0 + j - 64) | STATE, t)

    def occupancy(self):
        """The debounced occupancy in square order as 8 bytes (ranks[r] bit f = square 8r + f)."""
        ranks = self.ranks
        stable = self.deb.stable
        smap = self.smap
        for r in range(8):
            ranks[r] = 0
        for j in range(64):
            if (stable[j >> 3] >> (j & 7)) & 1:
                sq = smap[j]
                ranks[sq >> 3] |= 1 << (sq & 7)
        return ranks
