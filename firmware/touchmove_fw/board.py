# Start-up, step 1: reads the configuration (profiles, board.json, the sim's settings), checks it and handles
# safe boot. main.py then unloads this module (and config) before assemble.py loads the firmware's own modules:
# that keeps the start-up heap peak low.
import sys


def _hex(b):
    return "".join("%02x" % x for x in b)


def _getenv(name, default=None):
    try:
        import os

        v = os.getenv(name)
    except Exception:  # ports without getenv
        v = None
    return default if v is None or v == "" else v


def sim_overrides(argv=None):
    """Sim settings from the environment (or argv: main.py TIMELINE [SPEED]); None when not simulating.

    TOUCHMOVE_SIM=path        the timeline (JSON lines) to replay
    TOUCHMOVE_SIM_SPEED=n     device ms per real ms (integer, default 1); 0 = stepped, as fast as possible
    TOUCHMOVE_SIM_EXIT=0|1    exit once the timeline is over (default 1 when stepped, else 0: keep running)
    TOUCHMOVE_SIM_LINGER=ms   device ms after the last record before that exit (default 2000)
    TOUCHMOVE_BOARD=hex       the board id in hello (default the hex of "touchmove-sim")
    TOUCHMOVE_CLOCK_START=ms  device time at boot (default 0; tests start near the 2**30 wrap)
    """
    argv = sys.argv if argv is None else argv
    path = _getenv("TOUCHMOVE_SIM")
    speed = _getenv("TOUCHMOVE_SIM_SPEED")
    if len(argv) > 1:
        path = argv[1]
    if len(argv) > 2:
        speed = argv[2]
    if not path:
        return None
    speed = 0 if speed in ("fast", "step", "stepped") else int(speed or 1)
    if speed < 0:
        raise ValueError("TOUCHMOVE_SIM_SPEED must be >= 0")
    exit_default = "1" if speed == 0 else "0"
    return {
        "profile": "sim",
        "timeline": path,
        "speed": speed,
        "sim_exit": _getenv("TOUCHMOVE_SIM_EXIT", exit_default) == "1",
        "sim_linger": int(_getenv("TOUCHMOVE_SIM_LINGER", "2000")),
        "board_id": _getenv("TOUCHMOVE_BOARD", _hex(b"touchmove-sim")),
        "memstats": _getenv("TOUCHMOVE_MEMSTATS") == "1",
        "clock_start": int(_getenv("TOUCHMOVE_CLOCK_START", "0")),
    }


def safe_boot(cfg, machine):
    """True when the safe-boot button is held at power-up: stay at the REPL (so mpremote can flash)."""
    name = cfg.get("safe_boot")
    if not name or name not in cfg["pins"]:
        return False
    pin = machine.Pin(cfg["pins"][name], machine.Pin.IN, machine.Pin.PULL_UP)
    return pin() == 0


def setup(argv=None, path="board.json", machine=None, version=None):
    """The checked configuration for this board; None when the firmware must not start (safe boot).
    main.py then unloads this module and builds the firmware with assemble.build().

    On a board nothing here raises: the safe-boot button is read first, with board.json's board and pins
    where those are sound, and a board.json that is malformed or has a bad value, or a MicroPython that is
    too old, gives a configuration with ``fault`` set (the sentence to report): main.py then serves the
    host that sentence (halted.py) instead of scanning, and never resets into the same fault again."""
    from . import config

    version = sys.implementation.version if version is None else version
    sim = sim_overrides(argv)
    prof = _getenv("TOUCHMOVE_PROFILE") if sim is None and sys.platform == "linux" else None
    if prof == "board.json":  # the unix port with the fake machine: start as a board does (tests)
        prof = None
    elif sim is None and sys.platform == "linux" and machine is None:
        if prof is None:
            raise SystemExit("unix port: set TOUCHMOVE_SIM=timeline.jsonl (or TOUCHMOVE_PROFILE with fakes)")
        sim = {}
        cfg = config.get(prof, {})
    elif sim:
        cfg = config.get(None, sim)
    if sim is not None:  # the PC: a problem is an exit with the sentence, as any program's
        if tuple(version[:2]) < (1, 22):
            raise SystemExit("MicroPython 1.22 or later needed")
        config.check(cfg)
    else:
        from . import boardfile

        cfg = boardfile.board_config(path, version)
        if machine is None:
            import machine
        cfg["reset_cause"] = boardfile.reset_cause(machine)
        del boardfile
        _drop("boardfile")
    del config
    _drop("config")  # the profiles are read: free them before the firmware's modules load
    if cfg["driver"] != "sim":
        if machine is None:
            import machine
        if safe_boot(cfg, machine):
            print("touchmove: safe boot, firmware not started")
            return None
    if cfg["kbd_intr_off"] and not cfg.get("fault"):
        import micropython

        micropython.kbd_intr(-1)  # 0x03 in a command is data, not Ctrl-C (a halted board keeps Ctrl-C)
    return cfg


def _drop(name):
    import touchmove_fw

    sys.modules.pop("touchmove_fw." + name, None)
    try:
        delattr(touchmove_fw, name)
    except (AttributeError, KeyError):  # MicroPython raises KeyError for a missing module attribute
        pass


def unload():
    """Drop the set-up code (this module) from RAM once the configuration is read."""
    _drop("boardfile")
    _drop("config")
    _drop("board")
