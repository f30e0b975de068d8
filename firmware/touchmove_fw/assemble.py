# Start-up, step 2: builds the firmware from a checked configuration: the one place that imports machine
# and the drivers. main.py unloads this module once the app is made.
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


def build(cfg, machine=None):
    """Return (app, stream, wdt, cleanup, inp) for a configuration (config.check() it first)."""
    import asyncio

    from .app import App, make_leds
    from .clock import Clock, ScaledClock, SteppedClock
    from .link import Port, usb_in_endpoint

    sim = cfg["driver"] == "sim"
    start = cfg.get("clock_start", 0)
    if sim:
        speed = cfg["speed"]
        clock = SteppedClock(start) if speed == 0 else (Clock(start) if speed == 1 else ScaledClock(speed, start))
    else:
        clock = Clock(start)
    if machine is None and not sim:
        import machine
    import gc

    gc.collect()
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
                            tx=machine.Pin(p["uart_tx"]), rx=machine.Pin(p["uart_rx"]), timeout=0)
        out_stream = in_stream = uart
    else:
        # the raw streams: sys.stdout (text) turns "\n" into "\r\n" on the boards' USB CDC
        out_stream = getattr(sys.stdout, "buffer", sys.stdout)
        in_stream = getattr(sys.stdin, "buffer", sys.stdin)
        if sim:
            cleanup = drv_mod.raw_tty()
    stream = asyncio.StreamReader(in_stream)
    # the esp32 port's USB stdout write returns the full length whatever USB took (link.Port.exact)
    exact = cfg["link"] == "uart" or cfg.get("port") != "esp32"
    # rp2 over USB: the writer reads the CDC's IN endpoint state to write a chunk when that cannot wait; the
    # endpoint is the one the image's own USB descriptor gives its CDC data interface
    mem32 = None
    in_ep = 0
    if not sim and cfg["link"] == "usb" and cfg.get("port") == "rp2":
        mem32 = getattr(machine, "mem32", None)
        in_ep = usb_in_endpoint(machine)
    port = inp = Port(out_stream, in_stream, exact, mem32, in_ep)

    if sim:
        board_id = cfg.get("board_id") or _hex(b"touchmove-sim")
    else:
        board_id = _hex(machine.unique_id())
    import gc

    gc.collect()  # the modules are loaded: compact before the app's buffers are made (start-up peak)
    app = App(cfg, driver, clock, None, board_id, _boot_id(), buttons, leds, port)
    if sim and cfg.get("sim_exit"):
        # a bound method, not a closure: a closure would keep this module (unloaded after set-up) alive
        driver.linger = cfg.get("sim_linger", 2000)
        app.stop_when = driver.over
    if sim and cfg.get("memstats"):
        import gc

        # the start-up peak: this module and the firmware loaded
        app.memstats = {"peak_alloc": 0, "peak_live": 0, "setup_alloc": gc.mem_alloc()}

    wdt = None
    if cfg["wdt"] and not sim:
        wdt = machine.WDT(timeout=cfg["wdt_ms"])
    return app, stream, wdt, cleanup, inp


def start(cfg):
    """build() and unload(): the job for app.run(), or None with cfg["fault"] set when a board's build
    failed (a bad value check() did not catch, a pin the port refuses): main.py then reports it instead of
    resetting into it again. The sim raises (the PC shows the traceback)."""
    try:
        job = build(cfg)
    except Exception as exc:
        if cfg["driver"] == "sim":
            raise
        job = None
        cfg["fault"] = "start-up failed: %s: %s" % (type(exc).__name__, exc)
    unload()
    return job


def unload():
    """Drop this module and the start-up maps from RAM once the app is made."""
    import touchmove_fw

    for name in ("assemble", "maps"):
        sys.modules.pop("touchmove_fw." + name, None)
        try:
            delattr(touchmove_fw, name)
        except (AttributeError, KeyError):  # MicroPython raises KeyError for a missing module attribute
            pass
