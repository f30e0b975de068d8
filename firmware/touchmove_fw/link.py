# The serial link: the command line assembler, the non-blocking reader and the device message writer.
#
# Commands are assembled byte by byte into a preallocated buffer: on MicroPython a readline() on a partial
# line blocks the whole event loop, and a line without an end could grow without bound. Both "\n" and "\r\n"
# end a line; a line longer than MAX_LINE is discarded whole and answered with an error. Input is taken in
# chunks: after the event loop wakes the reader, every byte already waiting (up to READ_CHUNK) is read in the
# same pass, one byte per read() call (a read of n bytes from stdin waits for all n on the boards' ports).
#
# Output never blocks the scan loop more than PUMP_MS. On rp2 (MicroPython 1.28) a USB CDC write of n bytes
# waits up to its TX timeout (500 ms) while fewer than n bytes are free in TinyUSB's buffer and the host has
# the port open, and the stream layer retries a short write: one write of a chunk into a nearly full buffer
# waited twice, about 1 s (measured on the emulated Pico). Its poll says writable as soon as one byte is free.
# So the writer hands the port one byte at a time, each after a poll that says it is free: no write ever waits
# on a host that stopped reading. A pump writes for at most PUMP_MS (then the scan goes first), so the loop
# also stays short where each byte costs time (a UART at 115,200 baud). Formatted lines wait in a bounded
# buffer (OUT_BUF); what does not fit stays in the event queue, and when that overflows the scanner drops and
# marks, and the app sends a snapshot once the host reads again.
from . import protocol
from .clock import add, diff

try:
    from micropython import const
except ImportError:  # CPython

    def const(x):
        return x


MAX_LINE = const(256)
OUT_BUF = const(1024)  # bytes of formatted messages waiting for the port (a dozen lines)
READ_CHUNK = const(64)  # bytes read per reader pass
HOLD_MIN = const(250)  # ms without writes after a write the port did not take whole ...
HOLD_MAX = const(4000)  # ... doubling up to this while the host is not reading
STALL_MS = const(50)  # a write that took this long waited for a host that is not reading
PUMP_MS = const(2)  # a pump starts no write after this long (the app allows less when the next scan is due)

# LineAssembler.feed() results
NONE = const(0)  # byte consumed, no complete line yet
LINE = const(1)  # a complete, non-empty line is in buf[:n]
TOO_LONG = const(2)  # an over-long line just ended (it was discarded)

_MASK = const(0x3FFFFFFF)  # device time is kept modulo 2**30 (see clock.py)
_HALF = const(0x20000000)


class LineAssembler:
    def __init__(self, size=MAX_LINE):
        self.buf = bytearray(size)
        self.n = 0
        self.size = size
        self.overlong = False
        self.line_len = 0

    def feed(self, b):
        """Feed one byte value (0..255); returns NONE, LINE or TOO_LONG."""
        if b == 10:  # "\n"
            n = self.n
            self.n = 0
            if self.overlong:
                self.overlong = False
                return TOO_LONG
            if n and self.buf[n - 1] == 13:  # "\r\n"
                n -= 1
            self.line_len = n
            return LINE if n else NONE
        if self.overlong:
            return NONE
        if self.n >= self.size:
            self.overlong = True
            self.n = 0
            return NONE
        self.buf[self.n] = b
        self.n += 1
        return NONE

    def line(self):
        return bytes(self.buf[: self.line_len])


_IN_CTRL0 = const(0x50100080)  # RP2040 USB DPRAM: EP0_IN_BUFFER_CONTROL; endpoint n's IN is 8 x n further on
_AVAILABLE = const(0x400)  # ... its buffer 0 is armed: a packet waits for the host to take it
CHUNK = const(32)  # bytes a write may take at once while that endpoint is idle


def cdc_in_endpoint(desc_cfg):
    """The number of the bulk IN endpoint of the CDC data interface (class 0x0A) in a USB configuration
    descriptor (bytes), or 0 when it has none. The stock rp2 image's built-in descriptor
    (machine.USBDevice.BUILTIN_DEFAULT.desc_cfg) gives 2 (endpoint 0x82) on MicroPython 1.28."""
    i = 0
    n = len(desc_cfg)
    data = False
    while i + 2 <= n:
        size = desc_cfg[i]
        if size < 2 or i + size > n:
            break
        kind = desc_cfg[i + 1]
        if kind == 4 and size >= 9:  # an interface: is it CDC data?
            data = desc_cfg[i + 5] == 0x0A
        elif kind == 5 and size >= 7 and data and desc_cfg[i + 2] & 0x80 and desc_cfg[i + 3] & 3 == 2:
            return desc_cfg[i + 2] & 0x0F  # an endpoint of it: bulk, IN
        i += size
    return 0


def usb_in_endpoint(machine):
    """The rp2 USB CDC's IN endpoint number, read from the image's own descriptor, or 0 where the image does not
    say (no machine.USBDevice: MicroPython before 1.23)."""
    try:
        return cdc_in_endpoint(machine.USBDevice.BUILTIN_DEFAULT.desc_cfg)
    except AttributeError:
        return 0


class Port:
    """The link's streams behind polls (``out``: sys.stdout.buffer or a UART; ``inp``: sys.stdin.buffer or
    the same UART). ready(): a write would not wait; write(mv): the bytes the stream took; waiting(): a byte
    can be read without waiting; read_byte(): it (0..255), or -1 at the end of the stream."""

    def __init__(self, out, inp, exact=True, mem32=None, in_ep=0):
        import select

        # rp2 over USB: machine.mem32 and the CDC's IN endpoint number (usb_in_endpoint), to read its buffer
        # control word and see whether that endpoint holds a packet the host has not taken. While it does not, TinyUSB's
        # 256-byte buffer has at least 64 bytes free (arming a packet takes up to 64 bytes out of it, and a
        # completed one is re-armed at once), so a write of CHUNK bytes cannot wait. Without both: a byte a poll.
        self.in_ep = in_ep if mem32 is not None else 0  # 0: no chunk path
        self.mem32 = mem32 if in_ep else None
        self.in_ctrl = _IN_CTRL0 + 8 * in_ep
        self.out = out
        self.inp = inp
        # exact: write() returns what the port took. Not on ESP32_GENERIC_S3, whose stdout write returns the
        # full length whatever USB took (the UART REPL took it all): there only a write's time shows a stall.
        self.exact = exact
        self.one = bytearray(1)
        self.any = getattr(inp, "any", None)  # a UART: bytes waiting without a poll
        self.po = self.pi = None
        if self.any is None:
            self.po = select.poll()
            self.po.register(out, select.POLLOUT)
            self.pi = select.poll()
            self.pi.register(inp, select.POLLIN)

    def ready(self):
        if self.po is None:
            return True  # a UART sends at its baud rate whether or not anyone listens: it never waits long
        for _, ev in self.po.ipoll(0):
            return ev & 4 != 0  # POLLOUT
        return False

    def room(self):
        """0: a write would wait; 1: one byte fits for sure (the poll); CHUNK: the IN endpoint is idle."""
        if not self.ready():
            return 0
        m = self.mem32
        if m is not None and not (m[self.in_ctrl] & _AVAILABLE):
            return CHUNK
        return 1

    def write(self, mv):
        n = self.out.write(mv)
        return len(mv) if n is None else n

    def waiting(self):
        if self.any is not None:
            return self.any() > 0
        for _, ev in self.pi.ipoll(0):
            return ev & 25 != 0  # POLLIN, or POLLHUP / POLLERR: a read then says why (-1 at the end)
        return False

    def read_byte(self):
        return self.one[0] if self.inp.readinto(self.one) else -1


class Output:
    """Formats device messages into a bounded buffer and writes them out as the port accepts them.

    Owns ``seq`` (per boot, no gaps: a message gets a number only once it is in the buffer) and the wire
    time ``t``: device time is modulo 2**30 (clock.py), the wire carries it unwrapped and non-decreasing.

    ``port`` is a Port (ready(), write(mv)), or ``None`` with ``write`` a function taking a str, which gets
    whole lines at once (tests).
    """

    def __init__(self, write, clock, port=None, size=OUT_BUF):
        self.write = write
        self.clock = clock
        self.port = port
        self.size = size
        self.buf = None  # made by open(), once the set-up code has given its RAM back
        self.mv = None
        self.tmv = None  # a 64-byte scratch buffer for _compact()
        self.start = 0
        self.end = 0
        self.seq = 0
        self.last_t = clock.ms()  # the last message's device time (modulo 2**30)
        self.wire_t = self.last_t  # ... unwrapped: what the wire says
        self.lost = 0  # messages that found no room (replies while the host is not reading)
        self.blocked = 0  # writes the port did not take whole
        self.hold = -1  # device time before which no write is tried (after a short write), or -1
        self.backoff = HOLD_MIN
        self.one = bytearray(1)  # the byte being written
        self.mark_at = -1  # buffer offset of the first message queued since mark(), while none of it is written
        self.mark_seq = 0  # the seq that message got

    def mark(self):
        """Remember where the next message goes (unsent_since_mark)."""
        self.mark_at = self.end if self.port is not None else -1
        self.mark_seq = self.seq

    def unsent_since_mark(self, n):
        """True when exactly ``n`` messages were queued since mark() and not a byte of them is written yet."""
        return self.mark_at >= self.start and self.seq == self.mark_seq + n

    def _compact(self):
        # Move what waits to the buffer's start through a small scratch buffer, 64 bytes at a time: a copy of
        # the whole (up to OUT_BUF bytes) would need that much heap in one piece, which a fragmented heap may
        # not have (a MemoryError in the writer is fatal).
        k = self.end - self.start
        s = self.start
        mv = self.mv
        tmv = self.tmv
        i = 0
        while i < k:
            n = k - i if k - i < 64 else 64
            tmv[0:n] = mv[s + i : s + i + n]
            mv[i : i + n] = tmv[0:n]
            i += n
        self.start = 0
        self.end = k
        if self.mark_at >= 0:
            self.mark_at -= s

    def open(self, newline=False):
        if self.buf is None:
            self.buf = bytearray(self.size)
            self.mv = memoryview(self.buf)
            self.tmv = memoryview(bytearray(64))
            if newline:
                # A newline first (a board, after a reset): a line it was writing when it reset (a byte at a
                # time) ends here, on its own, and the host refuses it; without it the new boot's hello ran
                # into it and was refused too (emulated Pico, watchdog reset mid-line).
                self.buf[0] = 10
                self.end = 1

    def room(self):
        return self.size - self.end + self.start

    def send(self, kind, fields, t=-1, count=True):
        """Queue one message; False (and nothing sent, no seq used) when the buffer has no room for it, counted
        in ``lost`` unless ``count`` is False (a line the caller keeps and offers again)."""
        if t < 0:
            t = self.clock.ms()
        d = (t - self.last_t) & _MASK
        if d >= _HALF:  # earlier than the last message: keep t non-decreasing
            d = 0
        line = protocol.msg(kind, fields, self.seq, self.wire_t + d)
        if self.port is None:
            self.write(line.decode())
        else:
            if self.buf is None:
                self.open()
            n = len(line)
            if n > self.room():
                if count:
                    self.lost += 1
                return False
            if self.end + n > self.size:
                self._compact()
            self.mv[self.end : self.end + n] = line
            self.end += n
        self.last_t = add(self.last_t, d)
        self.wire_t += d  # past 2**30 this is a long int: the writer allocates (strings) anyway
        self.seq += 1
        return True

    def pump(self, budget=PUMP_MS):
        """Write what the port takes now without waiting; returns the bytes still waiting.

        One byte a write, each after the port's poll said a byte is free (Port.ready()), so no write waits for
        a host that is not reading; a pump starts no write after ``budget`` ms (the app gives it PUMP_MS, or less
        when the next scan is due sooner). On a port whose count says nothing
        (``exact`` False: esp32's USB stdout) and whose poll always says writable, a write that took STALL_MS
        or more waited: then no write is tried for ``backoff`` ms (doubling to HOLD_MAX while it goes on), and
        the rest of the line that byte belonged to is dropped (the host refuses the cut line by its check and
        asks for a snapshot). A busy PC running the sim, whose writes are exact, never mistakes a slow write
        for a stall."""
        port = self.port
        if port is None:
            return 0
        clock = self.clock
        if self.hold >= 0:
            if diff(clock.ms(), self.hold) < 0:  # before the hold ends
                return self.end - self.start
            self.hold = -1
        exact = getattr(port, "exact", True)
        room = getattr(port, "room", None)
        one = self.one
        buf = self.buf
        start = self.start
        end = self.end
        t0 = clock.ms()
        chunks = 1  # at most one chunk a pump: TinyUSB's buffer cannot fill from chunks faster than USB empties it
        while start < end:
            k = room() if room is not None else (1 if port.ready() else 0)
            if k == 0:
                break
            if k > 1 and exact and chunks > 0:
                chunks -= 1
                if k > end - start:
                    k = end - start
                n = port.write(self.mv[start : start + k])
                stalled = n < k
            elif exact:
                k = 1
                one[0] = buf[start]
                n = port.write(one)
                stalled = n < 1
            else:
                k = 1
                one[0] = buf[start]
                w0 = clock.ms()
                n = port.write(one)
                stalled = diff(clock.ms(), w0) >= STALL_MS
            if stalled:
                self.blocked += 1
                self.hold = add(clock.ms(), self.backoff)
                self.backoff = min(2 * self.backoff, HOLD_MAX)
                if n > 0:
                    start += n if n < k else k
                if not exact:
                    self.start = start
                    self._cut()
                    start = self.start
                break
            self.backoff = HOLD_MIN
            start += k
            if diff(clock.ms(), t0) >= budget:
                break
        if self.mark_at >= 0 and (start > self.mark_at or start == end):
            self.mark_at = -1  # the marked messages are (being) written
        if start == end:
            start = end = 0
        self.start = start
        self.end = end
        return end - start

    def _cut(self):
        # After a stalled write on a port whose count says nothing, that byte may be lost: drop the rest of its
        # line (the newline that ends it stays), or, when the byte ended a line, send a newline first. Either
        # way the host gets at most one broken line, which its check refuses (and a seq gap, at which it asks
        # for a snapshot), never two messages run together.
        buf = self.buf
        i = self.start
        if i > 0 and buf[i - 1] == 10:
            self.start = i - 1  # that newline again
            return
        while i < self.end and buf[i] != 10:
            i += 1
        self.start = i

    def error(self, why):
        return self.send("error", protocol.error_fields(why))
