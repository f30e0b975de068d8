# Board configuration. A configuration is a *board* (the microcontroller board: its MicroPython port, its
# pins) plus a *profile* (the sensing option: its driver and the GPIOs it uses on that board), plus debounce,
# watchdog, link and LEDs. hardware/pins.json holds the same pin maps as data and a test keeps the two, the
# wiring guides and each port's pin table in step. Pick a profile with PROFILE (and BOARD), or drop a
# board.json on the device: {"board": "esp32s3_devkitc", "profile": "matrix", ...overrides}. Nothing here
# touches hardware; check() rejects a configuration that the board's port cannot run.

BOARD = "pico"
PROFILE = "hc165"

COMMON = {
    "scan_hz": 200,  # 200 Hz with debounce_n = 4 reports a change 15..20 ms after it settles (MAX_SCAN_HZ)
    "debounce_n": 4,  # N equal consecutive samples (count mode) ...
    "debounce_ms": 0,  # ... or, when > 0, a change must persist this long (time mode)
    "heartbeat_ms": 1000,
    "queue": 64,  # bounded event queue; on overflow: drop and send a snapshot
    "wdt": True,  # a hung scan resets the board; hold the safe-boot button at power-up for the REPL
    "wdt_ms": 2000,
    "kbd_intr_off": True,  # a 0x03 byte in a command must not stop the firmware
    "square_map": {"rotate": 0, "mirror": False},  # or a list of 64 square names in wiring order
    "active_low": True,  # raw 0 = occupied (switches to GND with pull-ups)
    "leds": None,  # {"count": 64, "layout": "serpentine", "rotate": 0, "cap": 24, "budget_ma": 300}; needs
    # pins["led_data"]; budget_ma: the most the lit LEDs may draw (leds.py), from hardware/README.md
    "buttons": ("clock_white", "clock_black"),  # ids; GPIOs in pins under the same names
    "safe_boot": "clock_white",  # held at power-up: skip the firmware, stay at the REPL (for mpremote)
    "link": "usb",  # "usb" (stdin/stdout, USB CDC) or "uart" (115200 8N1, pins uart_tx/uart_rx)
    "uart_baud": 115200,
}

# budget_ma: USB's 500 mA less a 10 % reserve, the board's own current and the LEDs' idle current
# (hardware/README.md, power budget per sensing option): 300 mA, 150 mA on hall_mux (64 sensors: 192 mA)
_LEDS = {"count": 64, "layout": "serpentine", "rotate": 0, "cap": 24, "budget_ma": 300}

# The microcontroller boards. wdt_ms: the range machine.WDT accepts on the port (rp2: the RP2040 watchdog
# counts 2**24 - 1 ticks of 2 us, so at most 8388 ms), never below 1000 ms: the longest the scan waited on the
# emulated Pico, whatever the host did (not reading for 10 s, closing the port, commands), was tens of ms (a GC
# pass, a command), since no write waits for the host; the ESP32-S3's USB stdout can still wait 500 ms once per
# hold (docs/firmware.md, "Output never blocks scanning").
BOARDS = {
    "pico": {"port": "rp2", "wdt_max_ms": 8388, "uart_id": 0, "spi_id": 0, "i2c_id": 0, "pins": "pico"},
    "pico_w": {"port": "rp2", "wdt_max_ms": 8388, "uart_id": 0, "spi_id": 0, "i2c_id": 0, "pins": "pico"},
    # MicroPython's esp32 port: hardware SPI ids 1 and 2 (no SPI(0): that bus is the flash), I2C 0 and 1.
    "esp32s3_devkitc": {"port": "esp32", "wdt_max_ms": 60000, "uart_id": 1, "spi_id": 1, "i2c_id": 0,
                        "pins": "esp32s3"},
}

# The sensing options (driver settings; pins come from PINS below).
PROFILES = {
    # Recommended: 8 x 74HC165 on hardware SPI.
    "hc165": {"driver": "hc165", "leds": _LEDS},
    # 8 x 8 switches with a diode each; rows open-drain (high impedance when idle). 125 Hz: a scan takes about
    # 3.4 ms on an RP2040, no fit in half of a 5 ms slot; debounce_n 4 reports a change 24-32 ms after it settles
    "matrix": {"driver": "matrix", "scan_hz": 125, "leds": _LEDS},
    # 5 x MCP23017: 14 inputs a chip (GPA7/GPB7 are output-only in the current datasheet).
    # 400 kHz with 1.2 kOhm pull-ups (hardware/README.md); each transfer times out after 1 ms (drivers/mcp23017)
    "mcp23017": {"driver": "mcp23017", "i2c_addrs": (0x20, 0x21, 0x22, 0x23, 0x24), "i2c_freq": 400_000,
                 "leds": _LEDS},
    # Linear hall sensors behind 4 x CD74HC4067 (calibrate once with the board empty).
    # 50 Hz: a scan is 64 x (mux select, settle, ADC read), ~8.3-9.1 ms on an RP2040: half of a 20 ms slot. A
    # hall sensor does not bounce: 2 equal readings (debounce_n) report a change 20-40 ms after it settles
    "hall_mux": {"driver": "hall_mux", "scan_hz": 50, "debounce_n": 2, "active_low": False, "polarity": 1,
                 "calibration_delta": 4000, "calibration_file": "hall_calib.json", "leds": dict(_LEDS, budget_ma=150)},
    # The PC simulation (unix port): a timeline file instead of sensors, stdin/stdout as the link.
    "sim": {
        "driver": "sim",
        "active_low": False,
        "buttons": (),  # the sim board has its own clock buttons (timeline "clock" records)
        "sim_buttons": ("clock_white", "clock_black"),
        "safe_boot": None,
        "leds": {"count": 64, "layout": "serpentine", "rotate": 0, "cap": 24, "budget_ma": 300, "memory": True},
        "timeline": None,
        "speed": 1,  # device ms per real ms; 0 = stepped (as fast as possible)
    },
}

# GPIO numbers per pin family and profile (hardware/pins.json has the same).
# Pico / Pico W (RP2040): GP0-22 and GP26-28 reach the header (GP23-25 and GP29 are the board's own: power
# save, VBUS sense, LED / the CYW43 radio on a Pico W; GP29 measures VSYS). ADC on GP26-28 only.
# SPI0: SCK 2/6/18/22, TX 3/7/19, RX 0/4/16/20. I2C0: SDA 0/4/8/12/16/20, SCL 1/5/9/13/17/21.
# UART0: TX 0/12/16/28, RX 1/13/17.
# ESP32-S3-DevKitC-1: GPIO 0-21, 26-48 exist (22-25 do not); 19/20 are USB D-/D+ (MicroPython's USB REPL),
# 26-32 the flash, 33-37 the octal PSRAM of N8R8 modules, 43/44 UART0 (the board's USB-UART bridge),
# 0/3/45/46 strapping pins, 38 or 48 the on-board RGB LED. ADC1 on GPIO 1-10 (ADC2, 11-20, is taken by
# Wi-Fi). SPI and I2C route to any free GPIO.
PINS = {
    "pico": {
        "hc165": {"sck": 18, "mosi": 19, "miso": 16, "load": 17, "led_data": 22, "clock_white": 14,
                  "clock_black": 15, "uart_tx": 0, "uart_rx": 1},
        "matrix": {"rank1": 0, "rank2": 1, "rank3": 2, "rank4": 3, "rank5": 4, "rank6": 5, "rank7": 6,
                   "rank8": 7, "file_a": 8, "file_b": 9, "file_c": 10, "file_d": 11, "file_e": 12,
                   "file_f": 13, "file_g": 20, "file_h": 21, "led_data": 22, "clock_white": 14,
                   "clock_black": 15, "uart_tx": 16, "uart_rx": 17},
        "mcp23017": {"sda": 4, "scl": 5, "led_data": 22, "clock_white": 14, "clock_black": 15, "uart_tx": 0,
                     "uart_rx": 1},
        # the four mux outputs share ADC0 (GP26), the enables pick the mux
        "hall_mux": {"s0": 2, "s1": 3, "s2": 4, "s3": 5, "en0": 6, "en1": 7, "en2": 8, "en3": 9, "sig": 26,
                     "led_data": 22, "clock_white": 14, "clock_black": 15, "uart_tx": 0, "uart_rx": 1},
    },
    "esp32s3": {
        "hc165": {"sck": 12, "mosi": 11, "miso": 13, "load": 10, "led_data": 14, "clock_white": 15,
                  "clock_black": 16, "uart_tx": 17, "uart_rx": 18},
        "matrix": {"rank1": 1, "rank2": 2, "rank3": 4, "rank4": 5, "rank5": 6, "rank6": 7, "rank7": 8,
                   "rank8": 9, "file_a": 10, "file_b": 11, "file_c": 12, "file_d": 13, "file_e": 14,
                   "file_f": 15, "file_g": 16, "file_h": 21, "led_data": 47, "clock_white": 39,
                   "clock_black": 40, "uart_tx": 17, "uart_rx": 18},
        "mcp23017": {"sda": 8, "scl": 9, "led_data": 14, "clock_white": 15, "clock_black": 16, "uart_tx": 17,
                     "uart_rx": 18},
        # one ADC1 input per mux: no enables needed
        "hall_mux": {"s0": 10, "s1": 11, "s2": 12, "s3": 13, "sig0": 1, "sig1": 2, "sig2": 4, "sig3": 5,
                     "led_data": 14, "clock_white": 15, "clock_black": 16, "uart_tx": 17, "uart_rx": 18},
    },
}

# What one scan costs per driver (driver read plus the scan step, in µs): the largest scan_us the firmware's diag
# reported on the emulated Pico (stock MicroPython 1.28.0, RP2040 at 125 MHz; docs/firmware.md, "Scan rates").
SCAN_US = {"hc165": 1000, "matrix": 3500, "mcp23017": 2400, "hall_mux": 9200}

# The fastest scan rate per driver: a scan may take at most half its slot (the other half for the writer, the
# command reader and GC), and the slot is 1000 // scan_hz whole ms: the highest rate whose slot is at least
# twice SCAN_US. hc165 500 (2 ms), matrix 142 (7 ms), mcp23017 200 (5 ms), hall_mux 52 (19 ms).
MAX_SCAN_HZ = {"hc165": 500, "matrix": 142, "mcp23017": 200, "hall_mux": 52, "sim": 1000}

# Pins each driver needs (besides buttons, LEDs and the UART).
NEEDS = {
    "hc165": ("sck", "miso", "load"),
    "matrix": tuple("rank%d" % (r + 1) for r in range(8)) + tuple("file_" + f for f in "abcdefgh"),
    "mcp23017": ("sda", "scl"),
    "hall_mux": ("s0", "s1", "s2", "s3"),
}


def get(name=None, overrides=None):
    """The merged configuration of a profile on a board (defaults PROFILE and BOARD, or board.json's);
    raises ValueError for an unknown profile or board or a board.json that cannot be read."""
    if name is None and overrides is None:
        from .boardfile import read_board_json

        overrides, problem = read_board_json()
        if problem:
            raise ValueError(problem)
    if overrides and name is None:
        name = overrides.get("profile")
    name = name or PROFILE
    if name not in PROFILES:
        raise ValueError("unknown board profile: %s" % name)
    board = (overrides or {}).get("board") or BOARD
    if board not in BOARDS:
        raise ValueError("unknown board: %s (one of %s)" % (board, ", ".join(sorted(BOARDS))))
    cfg = dict(COMMON)
    b = BOARDS[board]
    for k in ("port", "wdt_max_ms", "uart_id", "spi_id", "i2c_id"):
        cfg[k] = b[k]
    cfg.update(PROFILES[name])
    cfg["pins"] = dict(PINS[b["pins"]].get(name, {}))
    if overrides:
        cfg.update(overrides)  # "pins" in board.json replaces the whole map
    cfg["profile"] = name
    cfg["board"] = board
    return cfg


def check(cfg):
    """Raise ValueError (one clear sentence) when the board's port cannot run this configuration."""
    if cfg["driver"] == "sim":
        return
    hz = cfg["scan_hz"]
    top = MAX_SCAN_HZ.get(cfg["driver"], 200)
    if not isinstance(hz, int) or not 10 <= hz <= top:
        raise ValueError("scan_hz must be 10..%d for %s (a scan must fit half its slot)" % (top, cfg["driver"]))
    w = cfg["wdt_ms"]
    if cfg["wdt"] and not (isinstance(w, int) and 1000 <= w <= cfg["wdt_max_ms"]):
        raise ValueError("wdt_ms must be 1000..%d on %s" % (cfg["wdt_max_ms"], cfg["board"]))
    pins = cfg["pins"]
    need = list(NEEDS.get(cfg["driver"], ()))
    if cfg["driver"] == "hall_mux":
        if "sig" in pins:  # one shared ADC input, the enables pick the mux
            need += ["sig"] + ["en%d" % i for i in range(4)]
        else:
            need += ["sig%d" % i for i in range(4)]
    if cfg["link"] == "uart":
        need += ["uart_tx", "uart_rx"]
    elif cfg["link"] != "usb":
        raise ValueError("link must be 'usb' or 'uart'")
    need += list(cfg["buttons"] or ())
    if cfg.get("leds") and not cfg["leds"].get("memory"):
        need.append("led_data")
    for p in need:
        if p not in pins:
            raise ValueError("profile %s on %s needs pin '%s'" % (cfg["profile"], cfg["board"], p))
    used = {}
    for p in need:
        g = pins[p]
        if g in used:
            raise ValueError("GPIO %d is both '%s' and '%s'" % (g, used[g], p))
        used[g] = p
