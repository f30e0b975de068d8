# Square numbering shared with the host: a1 = 0, b1 = 1, ..., h1 = 7, a2 = 8, ..., h8 = 63.
# Everything here is pure Python so the same module runs under CPython in the tests.

FILES = "abcdefgh"



def name(sq):
    """"e2" for 12. Builds a new str: only the writer (never the scan loop) names squares. A table of
    all 64 names would cost ~4 KB of heap on a 64-bit build for little gain."""
    return FILES[sq & 7] + "12345678"[sq >> 3]

# The standard start position: ranks 1, 2, 7 and 8 occupied.
START_OCC = bytes((0xFF, 0xFF, 0, 0, 0, 0, 0xFF, 0xFF))


def index(name):
    """Return the square index of a name such as "e2" (case-insensitive), or -1."""
    if not isinstance(name, str) or len(name) != 2:
        return -1
    f = FILES.find(name[0].lower())
    r = ord(name[1]) - 49  # "1" -> 0
    if f < 0 or r < 0 or r > 7:
        return -1
    return (r << 3) | f


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
