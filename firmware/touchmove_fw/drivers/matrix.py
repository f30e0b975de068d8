# An 8 x 8 switch matrix: ranks are rows (driven), files are columns (read, with pull-ups), one switch and
# one diode per square. Only one row is low at a time; a closed switch on that row pulls its column low.
#
# Why the diodes: without them current also flows backwards through closed switches. With the whole first
# rank occupied, every column is joined to row 1; one more piece on a3 joins column a to row 3, so driving
# row 3 low pulls column a low, which pulls row 1 low through a1, which pulls every column low through
# b1..h1: rank 3 reads fully occupied (a ghost rank). Any rank sharing a column with a full rank ghosts the
# same way. A diode in series with each switch (cathode towards the row) blocks the backward paths.
#
# Rows are open-drain: a row is driven low only while it is read and is high impedance otherwise, so two closed
# switches on one column never join a driven-high output to a driven-low one (push-pull rows would short two
# GPIO outputs through the switches when a diode is missing or shorted).
#
# Raw bits are column levels: 0 = switch closed, so the profile sets active_low.
import time


class Matrix:
    def __init__(self, rows, cols, settle_us=5):
        self.rows = rows  # 8 Pins, open-drain, idle released (rank 1 .. rank 8)
        self.cols = cols  # 8 Pins, inputs with pull-ups (file a .. file h)
        self.settle_us = settle_us
        for r in rows:
            r(1)

    def read(self, buf):
        cols = self.cols
        settle = self.settle_us
        for r in range(8):
            row = self.rows[r]
            row(0)
            time.sleep_us(settle)  # column lines charge through the pull-ups: let them settle
            v = 0
            for c in range(8):
                v |= cols[c]() << c
            row(1)
            buf[r] = v


def from_config(cfg, machine, clock):
    p = cfg["pins"]
    rows = [machine.Pin(p["rank%d" % (r + 1)], machine.Pin.OPEN_DRAIN, value=1) for r in range(8)]
    cols = [machine.Pin(p["file_" + "abcdefgh"[c]], machine.Pin.IN, machine.Pin.PULL_UP) for c in range(8)]
    return Matrix(rows, cols, cfg.get("settle_us", 5))
