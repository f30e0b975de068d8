# Host commands: parsing and carrying them out. Loaded by App.start(), after the set-up code gave its RAM back
# (not at the first command: that import stalled the scan 27-62 ms on the emulated Pico). Pure parsing under
# CPython too. A bad command gets an "error" record and changes nothing.
import json

from . import protocol
from .diag import diag_lines
from .squares import index

try:
    from micropython import const
except ImportError:  # CPython

    def const(x):
        return x

MAX_ID_LEN = const(32)  # longest string ping id echoed back
MAX_LED_SQUARES = const(64)


class CommandError(Exception):
    """A host command that cannot be carried out; str(exc) is the ``why`` sent back."""


def parse_command(line):
    """Decode one command line (bytes, without the newline). Returns (cmd, obj) or raises CommandError."""
    try:
        obj = json.loads(line)
    except Exception:  # ValueError, UnicodeError, MemoryError on deep nesting: all just bad input
        raise CommandError("bad json") from None
    if not isinstance(obj, dict):
        raise CommandError("a command is a JSON object")
    cmd = obj.get("cmd")
    if not isinstance(cmd, str):
        raise CommandError("missing 'cmd'")
    if cmd in ("hello", "snapshot", "calibrate", "diag"):
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
    {"cmd":"leds","mask":"ffff00000000ffff","color":[0,32,0]}  the compact form: the squares as 16 hex
        digits (as in a snapshot's occ, a1 = bit 0), any number of squares in 57 bytes plus the color
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
    mask = obj.get("mask")
    if mask is not None:
        if names or not isinstance(mask, str) or not 1 <= len(mask) <= 16:
            raise CommandError("'mask' is up to 16 hex digits, without 'squares'")
        try:
            bits = int(mask, 16)
        except ValueError:
            bits = -1
        if bits < 0:
            raise CommandError("'mask' is up to 16 hex digits, without 'squares'")
        for sq in range(64):
            if (bits >> sq) & 1:
                squares.append(sq)
    color = obj.get("color", [0, 0, 0])
    if not isinstance(color, list) or len(color) != 3:
        raise CommandError("'color' must be [r, g, b]")
    for c in color:
        if isinstance(c, bool) or not isinstance(c, int) or not 0 <= c <= 255:
            raise CommandError("'color' values must be 0..255")
    if not clear and not squares and "color" not in obj and mask is None:
        raise CommandError("leds needs 'clear' or 'squares'")
    return clear, squares, (color[0], color[1], color[2])


def handle(app, line):
    """Parse and carry out one command line (bytes, without the newline) on ``app``."""
    out = app.out
    try:
        cmd, obj = parse_command(line)
        if cmd == "hello":
            app.answer(True)
        elif cmd == "snapshot":
            app.answer(False)
        elif cmd == "ping":
            out.send("pong", protocol.pong_fields(obj.get("id", 0)))
        elif cmd == "leds":
            leds(app, obj)
        elif cmd == "calibrate":
            calibrate(app)
        elif cmd == "diag":
            app.send_lines(diag_lines(app))
    except CommandError as exc:
        out.error(exc.args[0] if exc.args else "bad command")
    except Exception:  # never crash on input
        out.error("internal error")


def leds(app, obj):
    clear, squares, color = parse_leds(obj)
    if app.leds is None:
        raise CommandError("no leds")
    if clear:
        app.leds.clear()
    if squares:
        app.leds.set(squares, color)
    app.leds.show()


def calibrate(app):
    cal = getattr(app.driver, "calibrate", None)
    if cal is None:
        raise CommandError("calibrate needs an analog (hall_mux) board")
    th = cal(app.cfg.get("calibration_delta", 4000))
    path = app.cfg.get("calibration_file")
    if path:
        from .drivers.hall_mux import save_thresholds

        try:
            save_thresholds(path, th)
        except OSError:
            raise CommandError("calibrated, but could not save") from None
    app.scanner.prime(app.clock.ms())  # the board (empty) as it now reads
    app.send_snapshot()
