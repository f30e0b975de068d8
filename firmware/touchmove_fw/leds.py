# Per-square LEDs on a WS2812 (NeoPixel) strip, with a brightness cap and a current budget.
# A WS2812B draws about 20 mA a colour channel at full value, linear in the value: 64 LEDs at full white would
# draw 64 x 60 mA = 3.8 A, far more than USB gives. Two limits, both applied before a frame reaches the strip:
#   cap (default 24): every channel is scaled by cap/255 (a lit square is bright enough at 24);
#   budget_ma: the frame's total, sum of (r + g + b) x 20 mA / 255 over all LEDs, never exceeds it; a frame
#   that would is scaled down as a whole (every channel by budget / total, rounding down), so the colours keep
#   their proportions and whatever the host sends, the LEDs cannot push the board past its USB budget.
# The budgets per sensing option come from the power table in hardware/README.md (USB 2.0: 500 mA, less a
# 10 % reserve, the board's own current and the LEDs' ~1 mA idle each): 300 mA, 150 mA for hall_mux.
try:
    from micropython import const
except ImportError:  # CPython

    def const(x):
        return x


MA_PER_CHANNEL = const(20)  # WS2812B: each of the three LED chips at full value
BUDGET_MA = const(150)  # when a configuration names none: the smallest of the profiles'
USB_MA = const(300)  # the most any budget may be (USB's 500 mA less the reserve and the board): board.json
HALL_MUX_MA = const(150)  # may ask for more, it gets this; hall_mux's 64 sensors draw 192 mA of the rest
_OFF = (0, 0, 0)
_DARK = bytes(192)  # a frame with every LED off


class Leds:
    def __init__(self, strip, led_map, cap=24, budget_ma=BUDGET_MA):
        """``strip``: a neopixel.NeoPixel (or anything with __setitem__ and write()) of >= 64 pixels;
        ``led_map``: bytearray(64) square -> pixel index (squares.led_map)."""
        self.strip = strip
        self.map = led_map
        self.cap = max(0, min(255, cap))
        self.budget_ma = max(0, min(budget_ma, USB_MA))  # whatever board.json says
        self.limit = self.budget_ma * 255 // MA_PER_CHANNEL  # the most sum(r + g + b) a frame may have
        # The frame is kept in the strip's own byte order (a NeoPixel's buf: G R B), so show() hands it over in
        # one copy: setting 64 pixels one by one from Python stalled the scan 30-40 ms a command on the
        # emulated Pico. A strip without a buf of its own gets its pixels one by one.
        buf = getattr(strip, "buf", None)
        order = getattr(strip, "ORDER", None)
        self.direct = buf is not None and order is not None and getattr(strip, "bpp", 3) == 3 and len(buf) >= 192
        self.order = bytes(order[:3]) if self.direct else b"\x00\x01\x02"
        self.px = bytearray(3 * 64)  # the frame as asked (after the cap), by pixel index, in that order

    def scale(self, c):
        return (c * self.cap + 127) // 255

    def clear(self):
        self.px[0:192] = _DARK  # one copy, not 192 stores from Python

    def set(self, squares, color):
        o = self.order
        r, g, b = self.scale(color[0]), self.scale(color[1]), self.scale(color[2])
        px = self.px
        for sq in squares:
            i = 3 * self.map[sq]
            px[i + o[0]] = r
            px[i + o[1]] = g
            px[i + o[2]] = b

    def show(self):
        """Send the frame to the strip, scaled down as a whole if it would exceed the budget."""
        px = self.px
        total = sum(px)
        num, den = (self.limit, total) if total > self.limit else (1, 1)
        strip = self.strip
        if self.direct:
            buf = strip.buf
            if num == den:
                buf[0:192] = px
            else:
                for j in range(192):
                    buf[j] = px[j] * num // den
            strip.write()
            return
        for k in range(64):
            i = 3 * k
            if px[i] or px[i + 1] or px[i + 2]:
                strip[k] = (px[i] * num // den, px[i + 1] * num // den, px[i + 2] * num // den)
            else:
                strip[k] = _OFF  # no new tuple for a dark LED
        strip.write()


class MemoryStrip:
    """A strip that only remembers its pixels (3 bytes each, like a NeoPixel's buffer, in R G B order): the sim
    board's LEDs (no hardware on the unix port)."""

    ORDER = (0, 1, 2)
    bpp = 3

    def __init__(self, n=64):
        self.buf = bytearray(3 * n)
        self.writes = 0

    def __setitem__(self, i, rgb):
        j = 3 * i
        self.buf[j] = rgb[0]
        self.buf[j + 1] = rgb[1]
        self.buf[j + 2] = rgb[2]

    def __getitem__(self, i):
        j = 3 * i
        return (self.buf[j], self.buf[j + 1], self.buf[j + 2])

    def write(self):
        self.writes += 1
