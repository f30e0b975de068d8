# The simulated board: replays a timeline of raw sensor states so the real firmware runs on a PC under the
# MicroPython unix port (the demo and the end-to-end tests).
#
# The timeline is JSON lines in the recording format, read as raw sensor changes at device time t (ms):
#   {"t": 1200, "type": "lift", "sq": "e2"}     the e2 sensor goes empty
#   {"t": 1900, "type": "place", "sq": "e4"}    the e4 sensor goes occupied
#   {"t": 0, "type": "snapshot", "occ": "..."}  every sensor at once (16 hex digits, a1 = bit 0)
#   {"t": 5000, "type": "clock", "side": "white"}  the white clock button is pressed for 100 ms
#   {"t": 0, "type": "fault", "chain": "dead"}  what the chain check (diag) reports from then on
# Chatter is just more lines a few ms apart: the firmware's debounce must hide it. Other types are ignored.
# The board starts in the standard position unless the timeline's first record is a snapshot.
# Unlike the hardware drivers, read() allocates when a record falls due (it reads the next line): the sim
# is a PC tool, and streaming keeps a long game's RAM flat.
from array import array

from ..clock import diff
from ..squares import START_OCC, index

try:
    from micropython import const
except ImportError:  # CPython

    def const(x):
        return x

_LIFT = const(0)
_PLACE = const(1)
_SNAP = const(2)
_CLOCK = const(3)  # arg 0 white, 1 black; arg 2..4: a chain fault (ok, dead, flat)
_CHAINS = ("ok", "dead", "flat")
PRESS_MS = const(100)
# A real board (200 Hz, 4 equal scans) reports every change that lasts this long (ms); shorter ones are chatter.
SEEN_MS = const(20)
# A state the timeline holds longer than SEEN_MS lasts at least this long (ms, or as long as the timeline says if
# less) even when the scans run late: quicker than deliberate hands, longer than the host's chatter window (25).
KEEP_MS = const(40)


def _parse_occ(s):
    if not isinstance(s, str) or not 1 <= len(s) <= 16:
        raise ValueError("bad occ")
    v = int(s, 16)
    return bytes((v >> (8 * r)) & 0xFF for r in range(8))


class SimBoard:
    """``lines``: a list of JSON lines, or the path of a timeline file. Records are read one at a time as
    device time reaches them (a game of any length needs no more RAM than one line); ``begin()`` opens the
    file, and the app calls it once the set-up code has been unloaded."""

    def __init__(self, lines, clock, hold=5):
        self.clock = clock
        # A late scan (a busy PC, a sped-up clock) must not skip or shorten a square's state that a real board
        # would have seen: a change that comes SEEN_MS or more after the square's previous one waits until that
        # state has been read by ``hold`` scans (the debounce count + 1) and has lasted as long as the timeline
        # says, up to KEEP_MS. Chatter (closer changes) is applied as it falls.
        self.hold = hold
        self.scans = 0
        self.changed_t = array("i", [-SEEN_MS] * 64)  # timeline time of each square's last change
        self.changed_scan = array("i", [-hold] * 64)  # the scan that applied it
        self.applied_t = array("i", [-SEEN_MS] * 64)  # and that scan's device time
        self.state = bytearray(START_OCC)
        self.snap = bytearray(8)
        self.first_snap = False
        self.source = lines
        self.file = None
        self.records = None
        self.next_t = -1  # device time of the next record; -1: none left
        self.next_code = 0
        self.end_t = 0
        self.release = array("i", [-1, -1])  # device time each clock button is released, -1 = up
        self.pressed = 0
        self.linger = 2000
        self.chain = "ok"
        self.t0 = clock.ms()  # timeline times are relative to the start (device time may start anywhere)
        if not isinstance(lines, str):
            self.begin()

    def begin(self):
        if self.records is not None:
            return
        src = self.source
        if isinstance(src, str):
            src = self.file = open(src)  # noqa: SIM115 (read lazily for the whole run; closed by over())
        self.source = None
        self.t0 = self.clock.ms()
        self.records = _records(src, self)
        self._next()
        if self.next_t >= 0 and self.next_code >> 6 == _SNAP and self.first_snap:
            # a leading snapshot is the initial occupancy, not a change
            for k in range(8):
                self.state[k] = self.snap[k]
            self._next()

    def _next(self):
        try:
            t, code = next(self.records)
        except StopIteration:
            self.next_t = -1
            if self.file is not None:
                self.file.close()
                self.file = None
            return
        self.next_t = t
        self.next_code = code
        self.end_t = t

    def done(self, t):
        """The timeline is over at device time ``t``."""
        return self.records is not None and self.next_t < 0 and diff(t, self.t0) > self.end_t

    def over(self, t):
        """The timeline ended ``linger`` ms ago (the app's stop_when in stepped/test runs)."""
        return self.done(t - self.linger)

    def chain_check(self):
        """What a 74HC165 chain check would say (timeline "fault" records set it)."""
        return self.chain

    def _advance(self, t):
        state = self.state
        self.scans += 1
        while 0 <= self.next_t <= t:
            code = self.next_code
            kind = code >> 6
            arg = code & 63
            if kind <= _PLACE:
                gap = self.next_t - self.changed_t[arg]
                if gap >= SEEN_MS and (self.scans - self.changed_scan[arg] < self.hold
                                       or t - self.applied_t[arg] < min(gap, KEEP_MS)):
                    break  # the square's state has not been seen long enough yet: this and later ones wait
                self.changed_t[arg] = self.next_t
                self.changed_scan[arg] = self.scans
                self.applied_t[arg] = t
            if kind == _PLACE:
                state[arg >> 3] |= 1 << (arg & 7)
            elif kind == _LIFT:
                state[arg >> 3] &= ~(1 << (arg & 7))
            elif kind == _SNAP:
                for k in range(8):
                    state[k] = self.snap[k]
            elif arg >= 2:  # a chain fault
                self.chain = _CHAINS[arg - 2]
            else:  # a clock button
                self.pressed |= 1 << arg
                self.release[arg] = self.next_t + PRESS_MS
            self._next()  # reads and parses the next record: the sim's only allocation
        for b in range(2):
            r = self.release[b]
            if r >= 0 and t >= r:
                self.pressed &= ~(1 << b)
                self.release[b] = -1

    def read(self, buf):
        self._advance(diff(self.clock.ms(), self.t0))
        state = self.state
        for k in range(8):
            buf[k] = state[k]


def _records(lines, board):
    """Yield (t, code) per timeline record, code = kind << 6 | arg; a snapshot's bits go to board.snap
    (board.first_snap tells whether it was the first record)."""
    import json

    last_t = 0
    first = True
    lineno = 0
    for line in lines:
        lineno += 1
        line = line.strip()
        if not line:
            continue
        try:
            rec = json.loads(line)
            t = rec["t"]
            kind = rec["type"]
            if not isinstance(t, int) or isinstance(t, bool) or t < 0:
                raise ValueError
        except Exception:
            raise ValueError("timeline line %d: not a record" % lineno) from None
        if t < last_t:
            t = last_t  # like the host's reader: time never runs backwards
        last_t = t
        if kind in ("lift", "place"):
            sq = index(rec.get("sq"))
            if sq < 0:
                raise ValueError("timeline line %d: bad square" % lineno)
            code, arg = (_LIFT if kind == "lift" else _PLACE), sq
        elif kind == "snapshot":
            try:
                occ = _parse_occ(rec.get("occ"))
            except ValueError:
                raise ValueError("timeline line %d: bad occ" % lineno) from None
            board.snap[:] = occ
            board.first_snap = first
            code, arg = _SNAP, 0
        elif kind == "clock":
            code, arg = _CLOCK, 0 if rec.get("side") == "white" else 1
        elif kind == "fault" and rec.get("chain") in _CHAINS:
            code, arg = _CLOCK, 2 + _CHAINS.index(rec["chain"])
        else:
            continue
        first = False
        yield t, (code << 6) | arg


class SimButtons:
    """The sim board's two clock buttons (bit 0 white, bit 1 black)."""

    def __init__(self, board):
        self.board = board

    def read(self):
        return self.board.pressed


def from_config(cfg, machine, clock):
    return SimBoard(cfg["timeline"], clock, cfg.get("debounce_n", 4) + 1)  # loaded by begin(), at app start


def raw_tty():
    """Put stdin, when a terminal, in raw mode; return a function restoring it (or None).

    On a pty (the host's end-to-end tests, the demo) the line discipline would echo commands back into our
    output, turn "\n" into "\r\n" and 0x03 into SIGINT."""
    try:
        import termios

        saved = termios.tcgetattr(0)
        termios.setraw(0)
    except Exception:  # not a terminal (a pipe, /dev/null): nothing to do
        return None

    def restore():
        try:
            termios.tcsetattr(0, termios.TCSANOW, saved)
        except Exception:
            pass

    return restore
