# Square numbering shared with the host: a1 = 0, b1 = 1, ..., h1 = 7, a2 = 8, ..., h8 = 63.
# Everything here is pure Python so the same module runs under CPython in the tests. The wiring and LED maps
# (needed only while the firmware starts) are in maps.py.

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
