# board.json: reading it, checking every key and value it sets, and the configuration a board falls back
# to (to read the safe-boot button and to report from) when it is wrong. Loaded only on a board, at start-up;
# main.py unloads it with config and board.
from .config import BOARD, BOARDS, PROFILE, PROFILES, get


# What board.json may set, and how each value is checked: (type, low, high) for ints, bool, str, or a
# function returning a problem (a sentence) or None. A key not listed here is refused: a typo must not be
# silently ignored.
def _int(lo, hi):
    return (int, lo, hi)


_GPIO = _int(0, 48)
KEYS = {
    "board": str, "profile": str, "pins": "pins",
    "scan_hz": _int(10, 1000), "debounce_n": _int(1, 32), "debounce_ms": _int(0, 1000),
    "heartbeat_ms": _int(100, 60000), "queue": _int(8, 1024), "wdt": bool, "wdt_ms": _int(1000, 60000),
    "kbd_intr_off": bool, "square_map": "square_map", "active_low": bool, "leds": "leds",
    "buttons": "names", "safe_boot": "name_or_none", "link": str, "uart_baud": _int(1200, 3000000),
    "uart_id": _int(0, 2), "spi_id": _int(0, 2), "i2c_id": _int(0, 1), "spi_baud": _int(10000, 20000000),
    "bitbang": bool, "settle_us": _int(0, 1000), "i2c_freq": _int(10000, 1000000),
    "i2c_timeout_us": _int(100, 100000), "i2c_addrs": "i2c_addrs", "polarity": _int(-1, 1),
    "calibration_delta": _int(1, 32767), "calibration_file": "name_or_none",
}
_LED_KEYS = {"count": _int(1, 256), "layout": str, "rotate": _int(0, 270), "cap": _int(0, 255),
             "budget_ma": _int(0, 5000), "memory": bool}


def _value_problem(key, v, kind):
    """Why value v cannot be key's (a sentence), or None."""
    if kind is bool or kind is str:
        if type(v) is not kind:
            return "'%s' must be %s" % (key, "true or false" if kind is bool else "a string")
    elif isinstance(kind, tuple):
        if type(v) is not int or not kind[1] <= v <= kind[2]:
            return "'%s' must be an integer %d..%d" % (key, kind[1], kind[2])
    elif kind == "pins":
        if not isinstance(v, dict):
            return "'pins' must be an object of pin names and GPIO numbers"
        for name in v:
            p = _value_problem("pins." + str(name), v[name], _GPIO)
            if p:
                return p
    elif kind == "names":
        if not isinstance(v, (list, tuple)) or any(type(x) is not str for x in v):
            return "'%s' must be a list of names" % key
    elif kind == "name_or_none":
        if v is not None and type(v) is not str:
            return "'%s' must be a name or null" % key
    elif kind == "i2c_addrs":
        if not isinstance(v, (list, tuple)) or any(type(a) is not int or not 8 <= a <= 0x77 for a in v):
            return "'i2c_addrs' must be a list of 7-bit addresses (8..119)"
    elif kind == "square_map":
        if not isinstance(v, (dict, list)):
            return "'square_map' must be {\"rotate\": .., \"mirror\": ..} or a list of 64 squares"
        from .maps import build_map

        try:
            build_map(v)
        except (ValueError, TypeError, KeyError) as exc:
            return "'square_map': %s" % exc
    elif kind == "leds":
        if v is None:
            return None
        if not isinstance(v, dict):
            return "'leds' must be an object or null"
        for k in v:
            if k not in _LED_KEYS:
                return "unknown key 'leds.%s'" % k
            p = _value_problem("leds." + k, v[k], _LED_KEYS[k])
            if p:
                return p
        if v.get("layout", "serpentine") not in ("rows", "serpentine"):
            return "'leds.layout' must be 'rows' or 'serpentine'"
        if v.get("rotate", 0) % 90:
            return "'leds.rotate' must be 0, 90, 180 or 270"
    return None


def overrides_problem(overrides):
    """What is wrong with board.json's object (one sentence), or None."""
    if not isinstance(overrides, dict):
        return "board.json must be a JSON object"
    for key in overrides:
        if key not in KEYS:
            return "unknown key '%s'" % key
        p = _value_problem(key, overrides[key], KEYS[key])
        if p:
            return p
    return None


def read_board_json(path="board.json"):
    """(overrides, problem): board.json's object and None; (None, None) when there is no board.json; or
    (None, a sentence) when it cannot be read or is not a JSON object with known keys and sound values.
    A damaged board.json is never replaced by the defaults in silence: the problem goes to the host."""
    try:
        import os

        os.stat(path)
    except OSError:
        return None, None  # no board.json: the defaults
    try:
        import json

        with open(path) as f:
            obj = json.load(f)
    except Exception as exc:  # ValueError (not JSON), OSError, MemoryError: all mean unusable
        return None, "board.json is not valid JSON (%s: %s)" % (type(exc).__name__, exc)
    p = overrides_problem(obj)
    return (None, "board.json: " + p) if p else (obj, None)


def fallback(overrides):
    """The configuration to read the safe-boot button with and to report from when board.json is wrong:
    board.json's board, profile and pins where those are sound, the defaults otherwise."""
    o = overrides if isinstance(overrides, dict) else {}
    board = o.get("board") if o.get("board") in BOARDS else BOARD
    name = o.get("profile") if o.get("profile") in PROFILES and o.get("profile") != "sim" else PROFILE
    cfg = get(name, {"board": board})
    if not _value_problem("pins", o.get("pins"), "pins"):
        cfg["pins"] = o["pins"]
    for key in ("safe_boot", "link", "uart_baud"):
        if key in o and not _value_problem(key, o[key], KEYS[key]):
            cfg[key] = o[key]
    if cfg["link"] not in ("usb", "uart"):
        cfg["link"] = "usb"
    return cfg


MIN_VERSION = (1, 22)  # rp2 before 1.22: a USB stdout write returns the full length and drops what did not fit


def version_problem(version):
    """Why this MicroPython (sys.implementation.version) cannot run the firmware, or None."""
    if tuple(version[:2]) < MIN_VERSION:
        return "MicroPython %d.%d.%d is too old: the firmware needs %d.%d or later" % (
            version[0], version[1], version[2], MIN_VERSION[0], MIN_VERSION[1])
    return None


def board_config(path, version):
    """The checked configuration from board.json, or the fallback with ``fault`` set (a sentence)."""
    from . import config

    overrides, problem = read_board_json(path)
    cfg = None
    if problem is None:
        problem = version_problem(version)
    if problem is None:
        try:
            cfg = config.get(None, overrides or {})
            config.check(cfg)
        except Exception as exc:  # ValueError: one sentence; anything else: a bad value check() missed
            problem = "board.json: %s" % (exc.args[0] if exc.args and type(exc) is ValueError else repr(exc))
            cfg = None
    if cfg is None:
        cfg = fallback(overrides)
        cfg["fault"] = problem
    return cfg


_CAUSES = (("PWRON_RESET", "power"), ("HARD_RESET", "hard"), ("WDT_RESET", "watchdog"),
           ("DEEPSLEEP_RESET", "deepsleep"), ("SOFT_RESET", "soft"))
FATAL_MARK = "fatal_reset"  # fatal.py writes it before machine.reset(); read and removed here


def reset_cause(machine, mark=FATAL_MARK):
    """Why the board last reset: "power", "hard", "watchdog", "deepsleep", "soft", "fatal" (the firmware
    reset itself after a fatal error, fatal.py) or "unknown"."""
    try:
        import os

        os.remove(mark)
        return "fatal"
    except OSError:
        pass
    try:
        c = machine.reset_cause()
    except Exception:  # a port without reset_cause()
        return "unknown"
    for attr, name in _CAUSES:
        if getattr(machine, attr, None) == c:
            return name
    return "unknown"
