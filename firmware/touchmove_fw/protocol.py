# Wire protocol v1: newline-delimited JSON. Device messages are the host's recording format
# (host/touchmove/records.py): every one has "type", then its fields, then "seq" (per-boot counter, no gaps)
# and "t" (device milliseconds). They are formatted by hand so the key order is fixed and the encoder
# needs no dict (MicroPython dicts do not keep insertion order). Pure Python: also runs under CPython.
import json

from .squares import index, name

PROTO = 1
MAX_ID_LEN = 32  # longest string ping id echoed back
MAX_LED_SQUARES = 64


class CommandError(Exception):
    """A host command that cannot be carried out; str(exc) is the ``why`` sent back."""


def occ_hex(ranks):
    """16 lowercase hex digits of an occupancy given as 8 bytes, ranks[r] bit f = square 8r + f."""
    return "%02x%02x%02x%02x%02x%02x%02x%02x" % (
        ranks[7], ranks[6], ranks[5], ranks[4], ranks[3], ranks[2], ranks[1], ranks[0])


def msg(kind, fields, seq, t):
    """One device message line. ``fields`` is the pre-encoded middle part, "" or starting with ","."""
    return '{"type":"%s"%s,"seq":%d,"t":%d}\n' % (kind, fields, seq, t)


def square_fields(sq):
    return ',"sq":"%s"' % name(sq)


def occ_fields(ranks):
    return ',"occ":"%s"' % occ_hex(ranks)


def hello_fields(fw, board, boot):
    return ',"proto":%d,"fw":"%s","board":"%s","boot":%d' % (PROTO, fw, board, boot)


def button_fields(name):
    return ',"id":"%s"' % name


def pong_fields(ident):
    return ',"id":%s' % json.dumps(ident)


def error_fields(why):
    return ',"why":%s' % json.dumps(why)


def parse_command(line):
    """Decode one command line (bytes, without the newline). Returns (cmd, obj) or raises CommandError."""
    try:
        obj = json.loads(line)
    except Exception:  # ValueError, UnicodeError, MemoryError on deep nesting: all just bad input
        raise CommandError("bad json")
    if not isinstance(obj, dict):
        raise CommandError("a command is a JSON object")
    cmd = obj.get("cmd")
    if not isinstance(cmd, str):
        raise CommandError("missing 'cmd'")
    if cmd in ("hello", "snapshot", "calibrate"):
        return cmd, obj
    if cmd == "ping":
        ident = obj.get("id", 0)
        if isinstance(ident, bool) or not (
            (isinstance(ident, int) and -(2**31) <= ident < 2**31)
            or (isinstance(ident, str) and len(ident) <= MAX_ID_LEN)
        ):
            raise CommandError("'id' must be an integer or a short string")
        return cmd, obj
    if cmd == "leds":
        parse_leds(obj)
        return cmd, obj
    raise CommandError("unknown cmd")


def parse_leds(obj):
    """Validate a leds command: returns (clear, squares, (r, g, b)).

    {"cmd":"leds","clear":true}                               all off
    {"cmd":"leds","squares":["e2","e4"],"color":[0,32,0]}     light these (others unchanged)
    {"cmd":"leds","clear":true,"squares":[...],"color":[...]} clear, then light these
    ``color`` defaults to [0, 0, 0] (turning the squares off); values 0..255 before the brightness cap.
    """
    clear = obj.get("clear", False)
    if not isinstance(clear, bool):
        raise CommandError("'clear' must be true or false")
    names = obj.get("squares", [])
    if not isinstance(names, list) or len(names) > MAX_LED_SQUARES:
        raise CommandError("'squares' must be a list of up to 64 squares")
    squares = []
    for name in names:
        sq = index(name)
        if sq < 0:
            raise CommandError("'squares' has a bad square")
        squares.append(sq)
    color = obj.get("color", [0, 0, 0])
    if not isinstance(color, list) or len(color) != 3:
        raise CommandError("'color' must be [r, g, b]")
    for c in color:
        if isinstance(c, bool) or not isinstance(c, int) or not 0 <= c <= 255:
            raise CommandError("'color' values must be 0..255")
    if not clear and not squares and "color" not in obj:
        raise CommandError("leds needs 'clear' or 'squares'")
    return clear, squares, (color[0], color[1], color[2])
