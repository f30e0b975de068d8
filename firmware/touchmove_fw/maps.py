# Wiring order -> squares, squares -> LEDs: used while the firmware starts (assemble.py unloads this module
# afterwards). Pure Python: also runs under CPython.
from .squares import index


def _rotate(f, r, rot):
    # Rotation of the board relative to the wiring, counter-clockwise seen from above.
    if rot == 0:
        return f, r
    if rot == 90:
        return 7 - r, f
    if rot == 180:
        return 7 - f, 7 - r
    if rot == 270:
        return r, 7 - f
    raise ValueError("rotate must be 0, 90, 180 or 270")


def build_map(spec):
    """Return a bytearray(64): input index (wiring order) -> square index.

    ``spec`` is None (input i is square i), a sequence of 64 square names in wiring order, or a dict
    ``{"rotate": 0|90|180|270, "mirror": bool}`` applied to the natural order (input 8*k + b = rank k+1,
    file b). ``mirror`` swaps files a<->h (a rank wired h..a). The result is checked to be a permutation.
    """
    m = bytearray(64)
    if spec is None:
        spec = {}
    if isinstance(spec, dict):
        rot = spec.get("rotate", 0)
        mirror = spec.get("mirror", False)
        for i in range(64):
            f = i & 7
            r = i >> 3
            if mirror:
                f = 7 - f
            f, r = _rotate(f, r, rot)
            m[i] = (r << 3) | f
    else:
        if len(spec) != 64:
            raise ValueError("a square map lists 64 squares")
        for i in range(64):
            sq = index(spec[i])
            if sq < 0:
                raise ValueError("bad square in map: %r" % (spec[i],))
            m[i] = sq
    seen = bytearray(64)
    for i in range(64):
        seen[m[i]] = 1
    if sum(seen) != 64:
        raise ValueError("the square map is not a permutation")
    return m


def led_map(layout, rotate=0):
    """Return a bytearray(64): square index -> LED index on the strip.

    ``rows``: LED 0 under a1, LED 7 under h1, LED 8 under a2 (every row wired left to right).
    ``serpentine``: one continuous strip snaking a1..h1, h2..a2, a3..h3, ... (the usual build: short
    jumps between rows). ``rotate`` turns the strip's origin like the square map's rotation.
    """
    m = bytearray(64)
    for k in range(64):
        r = k >> 3
        f = k & 7
        if layout == "serpentine" and r & 1:
            f = 7 - f
        elif layout not in ("rows", "serpentine"):
            raise ValueError("LED layout must be 'rows' or 'serpentine'")
        f, r = _rotate(f, r, rotate)
        m[(r << 3) | f] = k
    return m
