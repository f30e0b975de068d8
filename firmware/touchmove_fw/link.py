# The serial link: a byte-by-byte command line assembler and the device message writer.
#
# Commands are read one byte at a time into a preallocated buffer: on MicroPython a readline() on a partial
# line blocks the whole event loop, and a line without an end could grow without bound. Both "\n" and "\r\n"
# end a line; a line longer than MAX_LINE is discarded whole and answered with an error.
from . import protocol

try:
    from micropython import const
except ImportError:  # CPython

    def const(x):
        return x


MAX_LINE = const(256)

# LineAssembler.feed() results
NONE = const(0)  # byte consumed, no complete line yet
LINE = const(1)  # a complete, non-empty line is in buf[:n]
TOO_LONG = const(2)  # an over-long line just ended (it was discarded)


class LineAssembler:
    def __init__(self, size=MAX_LINE):
        self.buf = bytearray(size)
        self.n = 0
        self.size = size
        self.overlong = False
        self.line_len = 0

    def feed(self, b):
        """Feed one byte value (0..255)."""
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


class Output:
    """Formats and writes device messages; owns ``seq`` (per boot, no gaps) and keeps ``t`` non-decreasing.

    ``write`` is a function taking a str (sys.stdout.write, a UART's write, a list's append in tests).
    Every send happens synchronously from one event loop, so lines never interleave.
    """

    def __init__(self, write, clock):
        self.write = write
        self.clock = clock
        self.seq = 0
        self.last_t = 0

    def send(self, kind, fields, t=-1):
        if t < 0:
            t = self.clock.ms()
        if t < self.last_t:
            t = self.last_t
        self.last_t = t
        line = protocol.msg(kind, fields, self.seq, t)
        self.seq += 1
        self.write(line)

    def error(self, why):
        self.send("error", protocol.error_fields(why))
