# A bounded ring of events between the scan task (producer) and the writer task (consumer).
# Preallocated: push() allocates nothing, so the scan loop can run with the heap locked.
# On overflow the event is dropped and ``overflow`` is set: the writer then discards the backlog and sends
# a snapshot instead, from which the host resyncs.
from array import array

try:
    from micropython import const
except ImportError:  # CPython

    def const(x):
        return x

# An event code: bits 0..6 the subject (0..63 a square, 64 + i button i), bit 7 the new state
# (1 = occupied / pressed, 0 = empty / released).
STATE = const(0x80)
BUTTON0 = const(64)
# Times are device times, modulo 2**30 like all of them (clock.py): small ints, no allocation.
MASK = const(0x3FFFFFFF)


class EventQueue:
    def __init__(self, size=64):
        self.size = size
        self.codes = bytearray(size)
        self.times = array("i", bytes(4 * size))
        self.head = 0  # next to pop
        self.n = 0
        self.overflow = False
        self.dropped = 0  # total events dropped since boot (diagnostics)

    def push(self, code, t):
        if self.n >= self.size:
            self.overflow = True
            self.dropped += 1
            return False
        i = self.head + self.n
        if i >= self.size:
            i -= self.size
        self.codes[i] = code
        self.times[i] = t & MASK
        self.n += 1
        return True

    def peek_t(self, ref=0):
        """The oldest event's device time (modulo 2**30, like every device time; ``ref`` is unused)."""
        return self.times[self.head]

    def pop(self):
        """Remove the oldest event and return its code (read its time with peek_t() first)."""
        code = self.codes[self.head]
        self.head += 1
        if self.head >= self.size:
            self.head = 0
        self.n -= 1
        return code

    def clear(self):
        self.head = 0
        self.n = 0
        self.overflow = False
