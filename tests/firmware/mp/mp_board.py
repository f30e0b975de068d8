
# board.py builds a working firmware for every hardware profile from the fake machine: driver, buttons,
# NeoPixel LEDs, watchdog, the hello with the unique id; and safe boot.
import json

import machine
from hwmodels import HallModel, HC165Chain, MatrixModel, MCP23017Model
from touchmove_fw import assemble, board, config


def setup():
    machine.reset_fakes()


def _models(name, cfg):
    p = cfg["pins"]
    if name == "hc165":
        return HC165Chain(load=p["load"], clk=p["sck"], data=p["miso"])
    if name == "matrix":
        return MatrixModel([p["rank%d" % (r + 1)] for r in range(8)], [p["file_" + f] for f in "abcdefgh"])
    if name == "mcp23017":
        return [MCP23017Model(a) for a in cfg["i2c_addrs"]]
    return HallModel([p["s%d" % i] for i in range(4)], [p["sig"]], [p["en%d" % i] for i in range(4)])


def _occupy_start(name, model):
    # put the pieces of the start position on the modelled sensors
    start = (0xFF, 0xFF, 0, 0, 0, 0, 0xFF, 0xFF)
    if name == "hc165":
        for k in range(8):
            model.inputs[k] = ~start[k] & 0xFF  # switches to GND: occupied reads 0
    elif name == "matrix":
        for k in range(8):
            model.closed[k] = start[k]
    elif name == "mcp23017":
        bits = 0
        for k in range(8):
            bits |= start[k] << (8 * k)
        for c in range(5):  # 14 inputs a chip: GPA0..6, GPB0..6
            v = (bits >> (14 * c)) & 0x3FFF
            model[c].closed = (v & 0x7F) | ((v >> 7) << 8)
    else:
        for j in range(64):
            model.values[j] = 45000 if (start[j >> 3] >> (j & 7)) & 1 else 30000


def test_build_every_profile():
    for name in ("hc165", "matrix", "mcp23017", "hall_mux"):
        setup()
        cfg = config.get(name, {"wdt": True, "calibration_file": None})
        for b in cfg["buttons"]:
            machine.set_input(cfg["pins"][b], 1)  # buttons up (pull-ups)
        model = _models(name, cfg)
        _occupy_start(name, model)
        config.check(cfg)
        app, stream, wdt, cleanup, inp = assemble.build(cfg, machine)
        assert wdt is not None and stream is not None and cleanup is None and inp is not None
        assert app.leds is not None and app.leds.strip.n == 64
        lines = []
        app.out.port = None
        app.out.write = lines.append
        app.start()
        hello = json.loads(lines[0])
        assert hello["board"] == "e6614104032b8c2d" and hello["proto"] == 1, hello
        assert json.loads(lines[1])["occ"] == "ffff00000000ffff", (name, lines[1])
        # press white's clock for a while: one button event
        machine.set_input(cfg["pins"]["clock_white"], 0)
        for i in range(1, 8):
            app.scanner.scan(5 * i)
        machine.set_input(cfg["pins"]["clock_white"], 1)
        for i in range(8, 16):
            app.scanner.scan(5 * i)
        app.flush()
        out = [json.loads(x) for x in lines[2:]]
        assert [(m["type"], m["id"]) for m in out] == [("button", "clock_white")], (name, out)


def test_safe_boot_button():
    cfg = config.get("hc165", {})
    machine.set_input(cfg["pins"]["clock_white"], 1)
    assert not board.safe_boot(cfg, machine)
    machine.set_input(cfg["pins"]["clock_white"], 0)
    assert board.safe_boot(cfg, machine)
    assert not board.safe_boot(config.get("sim", {}), machine)


def test_sim_overrides_from_argv():
    o = board.sim_overrides(["main.py", "/tmp/x.jsonl", "fast"])
    assert o["timeline"] == "/tmp/x.jsonl" and o["speed"] == 0 and o["sim_exit"]
    o = board.sim_overrides(["main.py", "/tmp/x.jsonl", "10"])
    assert o["speed"] == 10 and not o["sim_exit"]


def test_calibrate_command_on_a_hall_board():
    path = "/tmp/touchmove_fw_calib_test.json"
    cfg = config.get("hall_mux", {"calibration_file": path})
    for b in cfg["buttons"]:
        machine.set_input(cfg["pins"][b], 1)
    model = _models("hall_mux", cfg)
    for j in range(64):
        model.values[j] = 20000 + 100 * j  # an empty board, every sensor a little different
    app = assemble.build(cfg, machine)[0]
    lines = []
    app.out.port = None
    app.out.write = lines.append
    app.start()
    app.command(b'{"cmd":"calibrate"}')
    reply = json.loads(lines[-1])
    assert reply["type"] == "snapshot" and reply["occ"] == "0000000000000000", reply
    with open(path) as f:
        saved = json.load(f)
    assert saved == [20000 + 100 * j + 4000 for j in range(64)]
    model.values[28] += 6000  # a piece on e4
    for i in range(1, 6):
        app.scanner.scan(5 * i)
    app.flush()
    assert json.loads(lines[-1])["type"] == "place" and json.loads(lines[-1])["sq"] == "e4"
    # the thresholds come back at the next start
    app2 = assemble.build(cfg, machine)[0]
    assert list(app2.driver.thresholds) == saved


def _diag(app, lines):
    del lines[:]
    app.command(b'{"cmd":"diag"}')
    app.flush(False)  # the writer task sends the diag's lines
    return [json.loads(x) for x in lines]


def test_diag_on_a_shift_register_board():
    for bitbang in (False, True):
        setup()
        cfg = config.get("hc165", {"leds": None, "bitbang": bitbang})
        for b in cfg["buttons"]:
            machine.set_input(cfg["pins"][b], 1)
        chain = _models("hc165", cfg)
        _occupy_start("hc165", chain)
        app = assemble.build(cfg, machine)[0]
        lines = []
        app.out.port = None
        app.out.write = lines.append
        app.start()
        chain.inputs[3] &= ~0x10  # a piece on e4, not yet debounced
        app.scanner.scan(5)
        d = _diag(app, lines)
        assert len(d) == 1 and d[0]["type"] == "diag" and d[0]["part"] == "scan", d
        d = d[0]
        assert d["chain"] == "ok" and d["driver"] == "hc165", d
        assert d["now"] == "ffff00001000ffff" and d["occ"] == "ffff00000000ffff", d  # raw bit vs debounced
        assert d["raw"] == "0000ffffefff0000", d  # the pin levels in wiring order: chip 3's D4 pulled low
        # the data wire cut (MISO pulled up): the tail byte reads 0xFF
        chain.cut = True
        assert _diag(app, lines)[0]["chain"] == "dead"
        chain.cut = False
        chain.stuck = True  # nothing shifts: every bit is chip 0's D7
        chain.inputs[0] = 0  # (and it reads 0)
        assert _diag(app, lines)[0]["chain"] == "flat"


def test_diag_on_a_hall_board_sends_adc_values():
    cfg = config.get("hall_mux", {"leds": None, "calibration_file": None})
    for b in cfg["buttons"]:
        machine.set_input(cfg["pins"][b], 1)
    model = _models("hall_mux", cfg)
    for j in range(64):
        model.values[j] = 30000 + j
    app = assemble.build(cfg, machine)[0]
    lines = []
    app.out.port = None
    app.out.write = lines.append
    app.start()
    d = _diag(app, lines)
    assert [m["part"] for m in d] == ["scan", "adc", "adc", "adc", "adc"]
    assert d[0]["chain"] == "n/a"
    assert [v for m in d[1:] for v in m["v"]] == [30000 + j for j in range(64)]
    assert all(len(x) < 512 for x in lines)  # the host takes lines up to 512 bytes (touchmove.serial.lines.MAX_LINE)


_DIR = "/tmp/touchmove_fw_boardjson"


def _board_json(text):
    import os

    try:
        os.mkdir(_DIR)
    except OSError:
        pass
    path = _DIR + "/board.json"
    if text is None:
        try:
            os.remove(path)
        except OSError:
            pass
    else:
        with open(path, "w") as f:
            f.write(text)
    return path


def _setup(text, held=False, version=None):
    path = _board_json(text)
    machine.set_input(14, 0 if held else 1)  # the white clock button (safe boot) on a Pico, any profile
    return board.setup(["main.py"], path, machine, version)


def test_a_bad_value_in_board_json_halts_with_the_reason_and_safe_boot_still_works():
    bad = (
        ('{"wdt": true, "wdt_ms": 50}', "wdt_ms"),
        ('{"scan_hz": "fast"}', "'scan_hz' must be an integer"),
        ('{"profile": "reed"}', "unknown board profile: reed"),
        ('{"board": "pico2"}', "unknown board: pico2"),
        ('{"wdt_m": 2000}', "unknown key 'wdt_m'"),
        ('{"pins": {"sck": "GP18"}}', "'pins.sck' must be an integer"),
        ('{"leds": {"cap": 900}}', "'leds.cap' must be an integer 0..255"),
        ('{"square_map": {"rotate": 45}}', "rotate must be 0, 90, 180 or 270"),
        ('[1, 2]', "board.json must be a JSON object"),
    )
    for text, why in bad:
        setup()
        cfg = _setup(text)  # never raises: a raise here was a reset, and the same raise again (a boot loop)
        assert cfg["fault"].startswith("board.json") and why in cfg["fault"], (text, cfg["fault"])
        assert cfg["driver"] == "hc165" and cfg["pins"]["clock_white"] == 14
        assert _setup(text, held=True) is None, text  # safe boot: the REPL, whatever board.json says


def test_a_malformed_board_json_is_never_replaced_by_the_defaults():
    for text in ('{"profile": "matrix",', "profile = matrix\n", "\xff\xfe{}"):
        setup()
        cfg = _setup(text)
        assert cfg is not None and "not valid JSON" in cfg["fault"], (text, cfg and cfg.get("fault"))
        assert _setup(text, held=True) is None


def test_a_sound_board_json_is_used_and_none_means_the_defaults():
    setup()
    cfg = _setup('{"profile": "matrix", "wdt": true, "wdt_ms": 3000, "leds": null}')
    assert not cfg.get("fault") and cfg["driver"] == "matrix" and cfg["wdt_ms"] == 3000 and cfg["leds"] is None
    cfg = _setup(None)
    assert not cfg.get("fault") and cfg["driver"] == "hc165"


def test_a_too_old_micropython_halts_with_the_reason():
    setup()
    cfg = _setup(None, version=(1, 21, 0, ""))
    assert "MicroPython 1.21.0 is too old" in cfg["fault"] and "1.22" in cfg["fault"], cfg["fault"]
    assert not _setup(None, version=(1, 22, 0, "")).get("fault")


class FakePort:
    """A link a test types into: ready/write as link.Port, waiting/read_byte for the host's bytes."""

    exact = True

    def __init__(self, data):
        self.data = bytearray(data)
        self.sent = bytearray()

    def ready(self):
        return True

    def write(self, mv):
        self.sent += bytes(mv)
        return len(mv)

    def waiting(self):
        return True  # at the end: the end of the stream

    def read_byte(self):
        if not self.data:
            return -1
        b = self.data[0]
        self.data = self.data[1:]
        return b

    def lines(self):
        return [json.loads(x) for x in bytes(self.sent).decode().splitlines() if x]


def test_a_halted_board_tells_the_host_what_is_wrong():
    from touchmove_fw import halted
    from touchmove_fw.clock import SteppedClock

    setup()
    machine.RESET_CAUSE[0] = machine.WDT_RESET
    cfg = _setup('{"wdt": true, "wdt_ms": 9000}')
    port = FakePort(b'{"cmd":"hello"}\n{"cmd":"ping","id":4}\n{"cmd":"leds","clear":true}\n{"cmd":"fly"}\n')
    halted.serve(cfg, cfg["fault"], port, "e6614104032b8c2d", 5, SteppedClock())
    msgs = port.lines()
    assert [m["seq"] for m in msgs] == list(range(len(msgs)))
    kinds = [m["type"] for m in msgs]
    assert kinds == ["hello", "error", "hello", "error", "pong", "error", "error"], kinds
    assert msgs[0]["board"] == "e6614104032b8c2d" and msgs[0]["reset"] == "watchdog", msgs[0]
    assert msgs[1]["why"] == "firmware not started: board.json: wdt_ms must be 1000..8388 on pico", msgs[1]
    assert msgs[5]["why"] == msgs[1]["why"] and msgs[6]["why"] == "unknown cmd"


def test_hello_carries_the_reset_cause():
    for cause, name in ((machine.PWRON_RESET, "power"), (machine.WDT_RESET, "watchdog"),
                        (machine.SOFT_RESET, "soft")):
        setup()
        machine.RESET_CAUSE[0] = cause
        cfg = _setup(None)
        HC165Chain(load=cfg["pins"]["load"], clk=cfg["pins"]["sck"], data=cfg["pins"]["miso"])
        app = assemble.build(cfg, machine)[0]
        lines = []
        app.out.port = None
        app.out.write = lines.append
        app.start()
        hello = json.loads(lines[0])
        assert hello["reset"] == name and hello["name"] == "touchmove" and hello["fw"] == "touchmove/0.1.0", hello


def test_after_a_fatal_reset_hello_says_fatal_once():
    from touchmove_fw import boardfile

    setup()
    machine.RESET_CAUSE[0] = machine.WDT_RESET  # rp2's machine.reset() is a watchdog reset
    mark = _DIR + "/fatal_reset"
    with open(mark, "w") as f:  # what fatal.report() leaves before machine.reset()
        f.write("1")
    assert boardfile.reset_cause(machine, mark) == "fatal"
    assert boardfile.reset_cause(machine, mark) == "watchdog"  # the mark is used once


def test_the_watchdog_is_on_by_default():
    """A finished board resets itself when the scan stops (safe boot keeps the REPL reachable)."""
    setup()
    cfg = _setup(None)
    assert cfg["wdt"] and cfg["wdt_ms"] == 2000
    HC165Chain(load=cfg["pins"]["load"], clk=cfg["pins"]["sck"], data=cfg["pins"]["miso"])
    wdt = assemble.build(cfg, machine)[2]
    assert wdt is not None and wdt.timeout == 2000
