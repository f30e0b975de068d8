# ruff: noqa: UP031  (MicroPython-side code: %-formatting, like the firmware)
# Drivers against scripted pin states (fake machine + hardware models).
import random

import machine
from hwmodels import HallModel, HC165Chain, MatrixModel, MCP23017Model
from touchmove_fw import config
from touchmove_fw.drivers import hall_mux, hc165, matrix, mcp23017


def setup():
    machine.reset_fakes()


def _patterns(n=20):
    random.seed(7)
    yield bytes(8)
    yield b"\xff" * 8
    yield bytes((0xFF, 0xFF, 0, 0, 0, 0, 0xFF, 0xFF))
    for _ in range(n):
        yield bytes(random.getrandbits(8) for _ in range(8))


def test_hc165_spi_reads_every_input():
    cfg = config.get("hc165", {})
    chain = HC165Chain(spi_id=cfg["spi_id"], load=cfg["pins"]["load"], clk=cfg["pins"]["sck"],
                       data=cfg["pins"]["miso"])
    drv = hc165.from_config(cfg, machine, None)
    buf = bytearray(8)
    for pat in _patterns():
        chain.inputs[:] = pat
        drv.read(memoryview(buf))
        assert bytes(buf) == pat, (buf, pat)
    assert chain.loads == 23


def test_hc165_spi_mode_0():
    cfg = config.get("hc165", {})
    HC165Chain(spi_id=cfg["spi_id"], load=cfg["pins"]["load"])
    drv = hc165.from_config(cfg, machine, None)
    assert drv.spi.polarity == 0 and drv.spi.phase == 0


def test_hc165_bitbang_reads_d7_first():
    cfg = config.get("hc165", {"bitbang": True})
    chain = HC165Chain(load=cfg["pins"]["load"], clk=cfg["pins"]["sck"], data=cfg["pins"]["miso"])
    drv = hc165.from_config(cfg, machine, None)
    buf = bytearray(8)
    for pat in _patterns():
        chain.inputs[:] = pat
        drv.read(buf)
        assert bytes(buf) == pat, (buf, pat)
        assert chain.pos == 64


def _matrix(diodes):
    cfg = config.get("matrix", {})
    p = cfg["pins"]
    rows = [p["rank%d" % (r + 1)] for r in range(8)]
    cols = [p["file_" + f] for f in "abcdefgh"]
    model = MatrixModel(rows, cols, diodes)
    return model, matrix.from_config(cfg, machine, None)


def test_matrix_with_diodes():
    model, drv = _matrix(True)
    buf = bytearray(8)
    for pat in _patterns():
        model.closed[:] = pat
        drv.read(buf)
        # columns read low where a switch is closed
        assert bytes(buf) == bytes(~b & 0xFF for b in pat), (buf, pat)


def test_matrix_without_diodes_ghosts_a_whole_rank():
    model, drv = _matrix(False)
    buf = bytearray(8)
    closed = bytearray(8)
    closed[0] = 0xFF  # the full first rank
    closed[2] = 0x01  # and a piece on a3
    model.closed[:] = closed
    drv.read(buf)
    seen = bytes(~b & 0xFF for b in buf)
    assert seen[0] == 0xFF
    assert seen[2] == 0xFF, "rank 3 should ghost as full without diodes: %r" % seen
    # the same position with diodes reads true
    model.diodes = True
    drv.read(buf)
    assert bytes(~b & 0xFF for b in buf) == bytes(closed)


def test_mcp23017_enables_pullups_and_reads_all_chips():
    cfg = config.get("mcp23017", {})
    models = [MCP23017Model(a) for a in cfg["i2c_addrs"]]
    drv = mcp23017.from_config(cfg, machine, None)
    for m in models:
        assert m.regs[0x0C] == 0xFF and m.regs[0x0D] == 0xFF  # GPPUA/B
        assert m.regs[0x00] == 0xFF and m.regs[0x01] == 0xFF  # inputs
    buf = bytearray(8)
    for pat in _patterns():
        for k in range(4):
            models[k].closed = pat[2 * k] | (pat[2 * k + 1] << 8)
        drv.read(buf)
        assert bytes(buf) == bytes(~b & 0xFF for b in pat), (buf, pat)


def _hall(shared=True):
    if shared:
        cfg = config.get("hall_mux", {"calibration_file": None})
        p = cfg["pins"]
        model = HallModel([p["s%d" % i] for i in range(4)], [p["sig"]], [p["en%d" % i] for i in range(4)])
    else:
        pins = {"s0": 2, "s1": 3, "s2": 4, "s3": 5, "sig0": 32, "sig1": 33, "sig2": 34, "sig3": 35}
        cfg = config.get("hall_mux", {"pins": pins, "calibration_file": None})
        model = HallModel([2, 3, 4, 5], [32, 33, 34, 35])
    return model, hall_mux.from_config(cfg, machine, None)


def test_hall_mux_thresholds_shared_adc():
    for shared in (True, False):
        setup()
        model, drv = _hall(shared)
        buf = bytearray(8)
        for pat in _patterns():
            for j in range(64):
                occupied = (pat[j >> 3] >> (j & 7)) & 1
                model.values[j] = 32768 + (9000 if occupied else -300) + j
            drv.read(buf)
            assert bytes(buf) == pat, (shared, buf, pat)
        assert model.bad_reads == 0


def test_hall_mux_calibrate_per_square():
    model, drv = _hall(True)
    random.seed(3)
    base = [20000 + random.getrandbits(14) for _ in range(64)]  # sensors differ by up to ~16000 counts
    for j in range(64):
        model.values[j] = base[j]
    th = drv.calibrate(4000, samples=4)
    for j in range(64):
        assert th[j] == base[j] + 4000
    buf = bytearray(8)
    drv.read(buf)
    assert bytes(buf) == bytes(8)
    model.values[12] = base[12] + 6000  # a magnet on e2
    drv.read(buf)
    assert buf[1] == 1 << 4 and sum(buf) == 16


def test_hall_thresholds_file_roundtrip():
    path = "/tmp/touchmove_fw_test_calib.json"
    hall_mux.save_thresholds(path, list(range(100, 164)))
    assert hall_mux.load_thresholds(path) == list(range(100, 164))
    with open(path, "w") as f:
        f.write("[1, 2")
    assert hall_mux.load_thresholds(path) is None
    assert hall_mux.load_thresholds("/nonexistent/x.json") is None
