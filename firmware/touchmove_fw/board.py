# Builds the firmware from a board profile: the one place that imports machine and the drivers.
# Imports happen inside the functions, in an order that keeps the start-up heap peak low: the profiles
# (config) are read and dropped before the firmware's own modules load.
import sys


def _hex(b):
    return "".join("%02x" % x for x in b)


def _boot_id():
    try:
        import os

        r = os.urandom(4)
        return ((r[0] << 24) | (r[1] << 16) | (r[2] << 8) | r[3]) & 0x3FFFFFFF
    except Exception:
        import random

        return random.getrandbits(30)


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
    }


def build(cfg, machine=None):
    """Return (app, stream, wdt, cleanup) for a profile."""
    import asyncio

    from .app import App, make_leds
    from .clock import Clock, ScaledClock, SteppedClock

    sim = cfg["driver"] == "sim"
    if sim:
        clock = SteppedClock() if cfg["speed"] == 0 else (Clock() if cfg["speed"] == 1 else ScaledClock(cfg["speed"]))
    else:
        clock = Clock()
    if machine is None and not sim:
        import machine
    drv_mod = __import__("touchmove_fw.drivers." + cfg["driver"], None, None, ["from_config"])
    driver = drv_mod.from_config(cfg, machine, clock)

    buttons = None
    cfg = dict(cfg)
    if sim:
        buttons = drv_mod.SimButtons(driver)
        cfg["button_ids"] = cfg.get("sim_buttons", ())
    elif cfg["buttons"]:
        from .buttons import PinButtons

        pins = [machine.Pin(cfg["pins"][name], machine.Pin.IN, machine.Pin.PULL_UP) for name in cfg["buttons"]]
        buttons = PinButtons(pins)

    leds = None
    if cfg.get("leds"):
        if cfg["leds"].get("memory"):
            from .leds import MemoryStrip

            strip = MemoryStrip(cfg["leds"].get("count", 64))
        else:
            import neopixel

            strip = neopixel.NeoPixel(machine.Pin(cfg["pins"]["led_data"]), cfg["leds"].get("count", 64))
        leds = make_leds(cfg, strip)
        leds.clear()
        leds.show()

    cleanup = None
    if cfg["link"] == "uart" and not sim:
        p = cfg["pins"]
        uart = machine.UART(cfg["uart_id"], baudrate=cfg["uart_baud"], bits=8, parity=None, stop=1,
                            tx=machine.Pin(p["uart_tx"]), rx=machine.Pin(p["uart_rx"]))
        write = uart.write
        stream = asyncio.StreamReader(uart)
    else:
        # the raw stream: sys.stdout (text) turns "\n" into "\r\n" on the boards' USB CDC
        write = getattr(sys.stdout, "buffer", sys.stdout).write
        stdin = getattr(sys.stdin, "buffer", sys.stdin)
        stream = asyncio.StreamReader(stdin)
        if sim:
            cleanup = drv_mod.raw_tty()

    if sim:
        board_id = cfg.get("board_id") or _hex(b"touchmove-sim")
    else:
        board_id = _hex(machine.unique_id())
    app = App(cfg, driver, clock, write, board_id, _boot_id(), buttons, leds)
    if sim and cfg.get("sim_exit"):
        # a bound method, not a closure: a closure would keep this module (unloaded after set-up) alive
        driver.linger = cfg.get("sim_linger", 2000)
        app.stop_when = driver.over
    if sim and cfg.get("memstats"):
        app.memstats = {"peak_alloc": 0, "peak_live": 0}

    wdt = None
    if cfg["wdt"] and not sim:
        wdt = machine.WDT(timeout=cfg["wdt_ms"])
    return app, stream, wdt, cleanup


def safe_boot(cfg, machine):
    """True when the safe-boot button is held at power-up: stay at the REPL (so mpremote can flash)."""
    name = cfg.get("safe_boot")
    if not name or name not in cfg["pins"]:
        return False
    pin = machine.Pin(cfg["pins"][name], machine.Pin.IN, machine.Pin.PULL_UP)
    return pin() == 0


def setup(argv=None):
    """Build the firmware for this board; None when it must not start (safe boot)."""
    from . import config

    sim = sim_overrides(argv)
    if sim is None and sys.platform == "linux":
        prof = _getenv("TOUCHMOVE_PROFILE")
        if prof is None:
            raise SystemExit("unix port: set TOUCHMOVE_SIM=timeline.jsonl (or TOUCHMOVE_PROFILE with fakes)")
        cfg = config.get(prof, {})
    else:
        cfg = config.get(None, sim) if sim else config.get()
    del config
    _drop("config")  # the profiles are read: free them before the firmware's modules load
    machine = None
    if cfg["driver"] != "sim":
        import machine

        if safe_boot(cfg, machine):
            print("touchmove: safe boot, firmware not started")
            return None
    app, stream, wdt, cleanup = build(cfg, machine)
    if app.memstats is not None:
        import gc

        app.memstats["setup_alloc"] = gc.mem_alloc()  # the start-up peak: set-up code and firmware loaded
    if cfg["kbd_intr_off"]:
        import micropython

        micropython.kbd_intr(-1)  # 0x03 in a command is data, not Ctrl-C
    return app, stream, wdt, cleanup


def _drop(name):
    import touchmove_fw

    sys.modules.pop("touchmove_fw." + name, None)
    try:
        delattr(touchmove_fw, name)
    except (AttributeError, KeyError):  # MicroPython raises KeyError for a missing module attribute
        pass


def unload():
    """Drop the set-up code (this module) from RAM once the firmware is built."""
    _drop("config")
    _drop("board")
