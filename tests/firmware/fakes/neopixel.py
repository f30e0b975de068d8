# A fake neopixel module: the real one's buffer (G R B, as MicroPython's neopixel.NeoPixel keeps it) and ORDER,
# and it counts writes.


class NeoPixel:
    ORDER = (1, 0, 2, 3)  # G R B W, as MicroPython's

    def __init__(self, pin, n, bpp=3, timing=1):
        self.pin = pin
        self.n = n
        self.bpp = bpp
        self.buf = bytearray(n * bpp)
        self.shown = self.pixels  # what the LEDs show: the pixels as of the last write()
        self.writes = 0

    def __setitem__(self, i, v):
        offset = i * self.bpp
        for k in range(self.bpp):
            self.buf[offset + self.ORDER[k]] = v[k]

    def __getitem__(self, i):
        offset = i * self.bpp
        return tuple(self.buf[offset + self.ORDER[k]] for k in range(self.bpp))

    def __len__(self):
        return self.n

    @property
    def pixels(self):
        return [self[i] for i in range(self.n)]

    def write(self):
        self.writes += 1
        self.shown = self.pixels
