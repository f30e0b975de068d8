# Per-input debouncing over a packed bit buffer (8 inputs a byte). Pure Python: runs under CPython too.
#
# An input's reported (stable) state flips only after the raw state has differed from it on N consecutive
# scans (count mode), or continuously for at least ``ms`` device milliseconds (time mode). A glitch that
# ends earlier resets the count, so contact chatter is never reported. Both modes allocate nothing per
# update: the counters and timestamps are preallocated and ``update`` only does small-int arithmetic.
from array import array

try:
    from micropython import const
except ImportError:  # CPython

    def const(x):
        return x


_MAX_N = const(255)
_MASK = const(0x3FFFFFFF)


class Debouncer:
    def __init__(self, nbytes, sink, n=3, ms=0):
        if not 1 <= n <= _MAX_N:
            raise ValueError("debounce count must be 1..255")
        self.nbytes = nbytes
        self.stable = bytearray(nbytes)  # the reported state, bit (j & 7) of byte (j >> 3)
        self.pending = bytearray(nbytes)  # bits whose raw state currently differs from stable
        self.count = bytearray(nbytes * 8)  # consecutive differing samples per input (count mode)
        self.since = array("i", bytes(4 * nbytes * 8) if ms else b"")  # device ms a difference started (time mode)
        self.n = n
        self.ms = ms
        # sink(j, state, t) is called for every reported change: j the input index, state 0 or 1.
        self.sink = sink

    def reset(self, raw):
        """Take ``raw`` as the stable state without reporting anything (at boot)."""
        for k in range(self.nbytes):
            self.stable[k] = raw[k]
            self.pending[k] = 0
        for j in range(self.nbytes * 8):
            self.count[j] = 0

    def update(self, raw, t):
        """Feed one scan (``raw``: bytes, same packing) taken at device time ``t`` (ms)."""
        stable = self.stable
        pending = self.pending
        for k in range(self.nbytes):
            diff = raw[k] ^ stable[k]
            if not (diff | pending[k]):
                continue  # the common case: nothing moving in these 8 inputs
            # pending keeps the inputs still settling (differing, not yet flipped)
            pending[k] = diff & ~self._byte(k, diff, t)

    def _byte(self, k, diff, t):
        stable = self.stable
        count = self.count
        since = self.since
        n = self.n
        ms = self.ms
        flipped = 0
        base = k << 3
        b = 0
        m = diff | self.pending[k]
        while m:
            if m & 1:
                j = base + b
                bit = 1 << b
                if diff & bit:
                    if ms:
                        # times modulo 2**30: small ints, no allocation, no array overflow
                        if not self.pending[k] & bit:
                            since[j] = t & _MASK  # the difference starts now
                            done = False
                        else:
                            done = ((t & _MASK) - since[j]) & _MASK >= ms
                    else:
                        c = count[j] + 1
                        done = c >= n
                        count[j] = 0 if done else c
                    if done:
                        stable[k] ^= bit
                        flipped |= bit
                        self.sink(j, (stable[k] >> b) & 1, t)
                else:
                    count[j] = 0  # back to the stable state: a glitch, forget it
            m >>= 1
            b += 1
        return flipped

    def get(self, j):
        return (self.stable[j >> 3] >> (j & 7)) & 1
