
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
    assert all(len(x) < 256 for x in lines)
