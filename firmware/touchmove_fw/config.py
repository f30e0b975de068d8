# Board configuration. A profile names its sensing driver, its pins (GPIO numbers; hardware/pins.json holds
# the same maps as data, and a test keeps the two and the wiring guides in step), how the wiring order maps
# to squares, debounce, watchdog and LEDs. Pick one with PROFILE, or drop a board.json on the device
# ({"profile": "matrix", ...overrides}). Nothing here touches hardware.

PROFILE = "hc165"

COMMON = {
    "scan_hz": 200,  # >= 100 Hz; 200 Hz with debounce_n = 4 reports a change 15..20 ms after it settles
    "debounce_n": 4,  # N equal consecutive samples (count mode) ...
    "debounce_ms": 0,  # ... or, when > 0, a change must persist this long (time mode)
    "heartbeat_ms": 1000,
    "queue": 64,  # bounded event queue; on overflow: drop and send a snapshot
    "wdt": False,  # enable on finished boards; off so development boards keep a usable REPL
    "wdt_ms": 2000,
    "kbd_intr_off": True,  # a 0x03 byte in a command must not stop the firmware
    "square_map": {"rotate": 0, "mirror": False},  # or a list of 64 square names in wiring order
    "active_low": True,  # raw 0 = occupied (switches to GND with pull-ups)
    "leds": None,  # {"count": 64, "layout": "serpentine", "rotate": 0, "cap": 24}; needs pins["led_data"]
    "buttons": ("clock_white", "clock_black"),  # ids; GPIOs in pins under the same names
    "safe_boot": "clock_white",  # held at power-up: skip the firmware, stay at the REPL (for mpremote)
    "link": "usb",  # "usb" (stdin/stdout, USB CDC) or "uart" (115200 8N1, pins uart_tx/uart_rx)
    "uart_id": 0,
    "uart_baud": 115200,
}

_LEDS = {"count": 64, "layout": "serpentine", "rotate": 0, "cap": 24}

PROFILES = {
    # Recommended: 8 x 74HC165 on SPI0 of a Raspberry Pi Pico.
    "hc165": {
        "driver": "hc165",
        "spi_id": 0,
        "pins": {"sck": 18, "mosi": 19, "miso": 16, "load": 17, "led_data": 22, "clock_white": 14,
                 "clock_black": 15},
        "leds": _LEDS,
    },
    "matrix": {
        "driver": "matrix",
        "pins": {"rank1": 0, "rank2": 1, "rank3": 2, "rank4": 3, "rank5": 4, "rank6": 5, "rank7": 6,
                 "rank8": 7, "file_a": 8, "file_b": 9, "file_c": 10, "file_d": 11, "file_e": 12,
                 "file_f": 13, "file_g": 20, "file_h": 21, "led_data": 22, "clock_white": 14,
                 "clock_black": 15},
        "leds": _LEDS,
    },
    "mcp23017": {
        "driver": "mcp23017",
        "i2c_id": 0,
        "i2c_addrs": (0x20, 0x21, 0x22, 0x23),
        "pins": {"sda": 4, "scl": 5, "led_data": 22, "clock_white": 14, "clock_black": 15},
        "leds": _LEDS,
    },
    # Linear hall sensors: the four mux outputs share ADC0, the enables pick the mux.
    "hall_mux": {
        "driver": "hall_mux",
        "active_low": False,  # the driver already compares against per-square thresholds
        "polarity": 1,
        "calibration_delta": 4000,
        "calibration_file": "hall_calib.json",
        "pins": {"s0": 2, "s1": 3, "s2": 4, "s3": 5, "en0": 6, "en1": 7, "en2": 8, "en3": 9,
                 "sig": 26, "led_data": 22, "clock_white": 14, "clock_black": 15},
        "leds": _LEDS,
    },
    # The PC simulation (unix port): a timeline file instead of sensors, stdin/stdout as the link.
    "sim": {
        "driver": "sim",
        "active_low": False,
        "pins": {},
        "buttons": (),  # the sim board has its own clock buttons (timeline "clock" records)
        "sim_buttons": ("clock_white", "clock_black"),
        "safe_boot": None,
        "leds": {"count": 64, "layout": "serpentine", "rotate": 0, "cap": 24, "memory": True},
        "timeline": None,
        "speed": 1,  # device ms per real ms; 0 = stepped (as fast as possible)
    },
}


def get(name=None, overrides=None):
    """The merged configuration of a profile (default PROFILE, or board.json's)."""
    if name is None and overrides is None:
        overrides = _board_json()
    if overrides and name is None:
        name = overrides.get("profile")
    name = name or PROFILE
    if name not in PROFILES:
        raise ValueError("unknown board profile: %s" % name)
    cfg = dict(COMMON)
    cfg.update(PROFILES[name])
    if overrides:
        cfg.update(overrides)
    cfg["profile"] = name
    return cfg


def _board_json():
    try:
        import json

        with open("board.json") as f:
            return json.load(f)
    except Exception:  # no board.json: the defaults above
        return None
