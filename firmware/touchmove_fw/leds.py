# Per-square LEDs on a WS2812 (NeoPixel) strip, with a brightness cap.
# 64 LEDs at full white draw about 64 x 60 mA = 3.8 A, far more than USB gives: every channel is scaled by
# cap/255 before it reaches the strip. The default cap 24 keeps even 64 white LEDs near 0.36 A, inside a
# USB 2.0 port's 500 mA with the Pico and the LEDs' own idle current (see hardware/README.md).


class Leds:
    def __init__(self, strip, led_map, cap=24):
        """``strip``: a neopixel.NeoPixel (or anything with __setitem__ and write()) of >= 64 pixels;
        ``led_map``: bytearray(64) square -> pixel index (squares.led_map)."""
        self.strip = strip
        self.map = led_map
        self.cap = max(0, min(255, cap))

    def scale(self, c):
        return (c * self.cap + 127) // 255

    def clear(self):
        for k in range(64):
            self.strip[k] = (0, 0, 0)

    def set(self, squares, color):
        rgb = (self.scale(color[0]), self.scale(color[1]), self.scale(color[2]))
        for sq in squares:
            self.strip[self.map[sq]] = rgb

    def show(self):
        self.strip.write()


class MemoryStrip:
    """A strip that only remembers its pixels: the sim board's LEDs (no hardware on the unix port)."""

    def __init__(self, n=64):
        self.pixels = [(0, 0, 0)] * n
        self.writes = 0

    def __setitem__(self, i, rgb):
        self.pixels[i] = rgb

    def __getitem__(self, i):
        return self.pixels[i]

    def write(self):
        self.writes += 1
