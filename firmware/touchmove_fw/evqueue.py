# A bounded ring of events between the scan task (producer) and the writer task (consumer).
# Preallocated: push() allocates nothing, so the scan loop can run with the heap locked.
# On overflow the event is dropped and ``overflow`` is set: the writer then discards the backlog and sends
# a snapshot instead, from which the host resyncs.
from array import array

# An event code: bits 0..6 the subject (0..63 a square, 64 + i button i), bit 7 the new state
# (1 = occupied / pressed, 0 = empty / released).
STATE = 0x80
BUTTON0 = 64
# Times are stored modulo 2**30 (a small int on every port: no allocation, no array overflow however long
# the board runs); unwrap() rebuilds the full device time from a recent one.
MASK = 0x3FFFFFFF


def unwrap(low, ref):
    """The device time whose low 30 bits are ``low``, nearest to ``ref`` (within +-2**29 ms = 6 days)."""
    d = (low - (ref & MASK)) & MASK
    if d >= 0x20000000:
        d -= 0x40000000
    return ref + d


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

    def peek_t(self, ref):
        """The oldest event's device time; ``ref`` is any device time within 6 days of it (e.g. now)."""
        return unwrap(self.times[self.head], ref)

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
