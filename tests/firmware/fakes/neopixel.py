# A fake neopixel module: remembers the pixels and counts writes.


class NeoPixel:
    def __init__(self, pin, n, bpp=3, timing=1):
        self.pin = pin
        self.n = n
        self.pixels = [(0, 0, 0)] * n
        self.shown = list(self.pixels)  # what the LEDs show: the pixels as of the last write()
        self.writes = 0

    def __setitem__(self, i, rgb):
        self.pixels[i] = rgb

    def __getitem__(self, i):
        return self.pixels[i]

    def __len__(self):
        return self.n

    def write(self):
        self.writes += 1
        self.shown = list(self.pixels)
