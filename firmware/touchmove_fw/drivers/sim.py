# The simulated board: replays a timeline of raw sensor states so the real firmware runs on a PC under the
# MicroPython unix port (the demo and the end-to-end tests).
#
# The timeline is JSON lines in the recording format, read as raw sensor changes at device time t (ms):
#   {"t": 1200, "type": "lift", "sq": "e2"}     the e2 sensor goes empty
#   {"t": 1900, "type": "place", "sq": "e4"}    the e4 sensor goes occupied
#   {"t": 0, "type": "snapshot", "occ": "..."}  every sensor at once (16 hex digits, a1 = bit 0)
#   {"t": 5000, "type": "clock", "side": "white"}  the white clock button is pressed for 100 ms
# Chatter is just more lines a few ms apart: the firmware's debounce must hide it. Other types are ignored.
# The board starts in the standard position unless the timeline's first record is a snapshot.
# The whole timeline is parsed into compact arrays at start, so read() allocates nothing.
from array import array

from ..squares import START_OCC, index

_LIFT = 0
_PLACE = 1
_SNAP = 2
_CLOCK = 3
PRESS_MS = 100


def _parse_occ(s):
    if not isinstance(s, str) or not 1 <= len(s) <= 16:
        raise ValueError("bad occ")
    v = int(s, 16)
    return bytes((v >> (8 * r)) & 0xFF for r in range(8))


class SimBoard:
    def __init__(self, lines, clock):
        import json

        self.clock = clock
        self.state = bytearray(START_OCC)
        self.times = array("i")
        self.kinds = bytearray()
        self.args = bytearray()
        self.snaps = []
        last_t = 0
        first = True
        for lineno, line in enumerate(lines):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
                t = rec["t"]
                kind = rec["type"]
                if not isinstance(t, int):
                    raise ValueError
            except Exception:
                raise ValueError("timeline line %d: not a record" % (lineno + 1))
            if t < last_t:
                t = last_t  # like the host's reader: time never runs backwards
            last_t = t
            if kind in ("lift", "place"):
                sq = index(rec.get("sq"))
                if sq < 0:
                    raise ValueError("timeline line %d: bad square" % (lineno + 1))
                code, arg = (_LIFT if kind == "lift" else _PLACE), sq
            elif kind == "snapshot":
                occ = _parse_occ(rec.get("occ"))
                if first:
                    self.state[:] = occ
                    first = False
                    continue
                code, arg = _SNAP, len(self.snaps)
                self.snaps.append(occ)
            elif kind == "clock":
                code, arg = _CLOCK, 0 if rec.get("side") == "white" else 1
            else:
                continue
            first = False
            self.times.append(t)
            self.kinds.append(code)
            self.args.append(arg)
        self.pos = 0
        self.end_t = last_t
        self.release = array("i", [-1, -1])  # device time each clock button is released, -1 = up
        self.pressed = 0

    def done(self, t):
        return self.pos >= len(self.times) and t > self.end_t

    def _advance(self, t):
        times = self.times
        n = len(times)
        state = self.state
        while self.pos < n and times[self.pos] <= t:
            i = self.pos
            kind = self.kinds[i]
            arg = self.args[i]
            if kind == _PLACE:
                state[arg >> 3] |= 1 << (arg & 7)
            elif kind == _LIFT:
                state[arg >> 3] &= ~(1 << (arg & 7))
            elif kind == _SNAP:
                snap = self.snaps[arg]
                for k in range(8):
                    state[k] = snap[k]
            else:
                self.pressed |= 1 << arg
                self.release[arg] = times[i] + PRESS_MS
            self.pos = i + 1
        for b in range(2):
            r = self.release[b]
            if r >= 0 and t >= r:
                self.pressed &= ~(1 << b)
                self.release[b] = -1

    def read(self, buf):
        self._advance(self.clock.ms())
        state = self.state
        for k in range(8):
            buf[k] = state[k]


class SimButtons:
    """The sim board's two clock buttons (bit 0 white, bit 1 black)."""

    def __init__(self, board):
        self.board = board

    def read(self):
        return self.board.pressed


def from_config(cfg, machine, clock):
    path = cfg["timeline"]
    with open(path) as f:
        return SimBoard(f, clock)
