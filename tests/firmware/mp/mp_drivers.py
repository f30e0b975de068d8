
# Drivers against scripted pin states (fake machine + hardware models).
import json
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


def _mcp_set(models, pat):
    """Close the switches of pattern ``pat`` (8 bytes, wiring order) on 5 chips of 14 inputs."""
    bits = 0
    for k in range(8):
        bits |= pat[k] << (8 * k)
    for c in range(5):
        v = (bits >> (14 * c)) & 0x3FFF
        models[c].closed = (v & 0x7F) | ((v >> 7) << 8)  # GPA0..6, GPB0..6


def test_mcp23017_fourteen_inputs_a_chip():
    cfg = config.get("mcp23017", {})
    assert len(cfg["i2c_addrs"]) == 5  # 64 squares / 14 inputs a chip
    models = [MCP23017Model(a) for a in cfg["i2c_addrs"]]
    drv = mcp23017.from_config(cfg, machine, None)
    for m in models:
        assert m.regs[0x0C] == 0x7F and m.regs[0x0D] == 0x7F  # pull-ups on GPx0..6
        assert m.regs[0x00] == 0x7F and m.regs[0x01] == 0x7F  # GPx0..6 inputs, GPA7/GPB7 outputs
        assert m.regs[0x14] == 0 and m.regs[0x15] == 0  # ... driven low
    buf = bytearray(8)
    for pat in _patterns():
        _mcp_set(models, pat)
        drv.read(buf)
        assert bytes(buf) == bytes(~b & 0xFF for b in pat), (buf, pat)
    assert all(m.gp7_inputs_at_read == 0 for m in models)
    assert drv.errors == 0


def test_mcp23017_bus_errors_keep_last_good_data_and_recover():
    cfg = config.get("mcp23017", {})
    models = [MCP23017Model(a) for a in cfg["i2c_addrs"]]
    drv = mcp23017.from_config(cfg, machine, None)
    made = []
    real = drv.recover

    def recover():
        made.append(1)
        return real()

    drv.recover = recover
    buf = bytearray(8)
    start = bytes((0xFF, 0xFF, 0, 0, 0, 0, 0xFF, 0xFF))
    _mcp_set(models, start)
    drv.read(buf)
    good = bytes(buf)
    assert good == bytes(~b & 0xFF for b in start)
    # a glitch on chip 1: one failed read, the chip's last reading stands, the others are read
    models[1].fail = 1
    models[4].closed = 0  # squares of chip 4 lift meanwhile (inputs 56..63 = rank 8)
    drv.read(buf)
    assert drv.errors == 1 and buf[7] == 0xFF and bytes(buf[:7]) == good[:7], bytes(buf)
    drv.read(buf)
    assert drv.errors == 1 and buf[7] == 0xFF
    # a stuck bus: every transaction fails; scanning goes on with the last good data, then the bus is recovered
    for m in models:
        m.fail = -1
    before = bytes(buf)
    for _ in range(mcp23017.RECOVER_AFTER):
        drv.read(buf)  # never raises
        assert bytes(buf) == before
    assert made == [1] and drv.recoveries == 1 and drv.errors > 5 * mcp23017.RECOVER_AFTER
    # the bus comes back (the chips were power-cycled meanwhile): they are set up again, fresh data flows
    for m in models:
        m.fail = 0
        m.regs[0] = m.regs[1] = m.regs[0x0C] = m.regs[0x0D] = 0xFF
    drv.read(buf)
    assert all(m.regs[0] == 0x7F and m.regs[0x0C] == 0x7F for m in models)
    drv.read(buf)
    assert made == [1] and buf[7] == 0xFF and drv.failing == 0
    _mcp_set(models, start)
    drv.read(buf)
    assert bytes(buf) == good


def test_mcp23017_error_reaches_the_host():
    from touchmove_fw import assemble

    cfg = config.get("mcp23017", {"leds": None, "buttons": ()})
    models = [MCP23017Model(a) for a in cfg["i2c_addrs"]]
    app = assemble.build(cfg, machine)[0]
    lines = []
    app.out.port = None
    app.out.write = lines.append
    app.start()
    models[2].fail = 3
    t = 0
    for _ in range(250):  # a bit more than one heartbeat
        t += 5
        app.scanner.scan(t)
        app.flush()
    out = [json.loads(x) for x in lines]
    errs = [m for m in out if m["type"] == "error"]
    assert len(errs) == 1 and "sensor bus" in errs[0]["why"] and "3" in errs[0]["why"], out
    assert not [m for m in out if m["type"] in ("lift", "place")]  # the glitch flipped no square


def _timed_scans(app, t, count):
    """Run ``count`` scans 5 ms apart from board time ``t``, writing out after each; return the last time and the
    scans' durations in µs, sorted."""
    import time

    times = []
    for _ in range(count):
        t += 5
        u0 = time.ticks_us()
        app.scanner.scan(t)
        times.append(time.ticks_diff(time.ticks_us(), u0))
        app.flush()
    times.sort()
    return t, times


def test_mcp23017_a_stuck_chip_costs_a_bounded_time_and_is_reported():
    """A chip holding SCL low makes every transfer wait the I2C timeout: rp2's default 50 ms would stall a scan
    50 ms a chip (250 ms with all five). The driver passes i2c_timeout_us (1000 us: 8 x a 2-byte register
    read at 400 kHz), so one stuck chip costs about 1 ms a scan; the failures are counted as timeouts and
    reach the host in the bus error record."""

    from touchmove_fw import assemble

    cfg = config.get("mcp23017", {"leds": None, "buttons": ()})
    models = [MCP23017Model(a) for a in cfg["i2c_addrs"]]
    app = assemble.build(cfg, machine)[0]
    drv = app.driver
    assert drv.i2c.freq == 400_000 and drv.i2c.timeout == 1000, (drv.i2c.freq, drv.i2c.timeout)
    lines = []
    app.out.port = None
    app.out.write = lines.append
    app.start()
    models[3].stuck = True
    _, times = _timed_scans(app, 0, 250)  # a bit more than one heartbeat
    # one stuck chip: one 1 ms timeout a scan (before: rp2's default 50 ms, in every scan). Nine scans in ten under
    # 40 ms, not the worst: on a PC shared with parallel tests a few scans are preempted for tens of ms (at load 12:
    # 5 of 250 took 24-63 ms, the median 1.2 ms)
    assert 1000 <= times[125] < 3000 and times[225] < 40000, (times[125], times[225], times[-5:])
    assert drv.timeouts >= 200 and drv.errors >= drv.timeouts, (drv.timeouts, drv.errors)
    out = [json.loads(x) for x in lines]
    errs = [m["why"] for m in out if m["type"] == "error"]
    assert errs and "timed out" in errs[0], errs
    # the bus counters are in diag too (and the scan task's scan_us_max shows the cost)
    app.command(b'{"cmd":"diag"}')
    app.flush(False)  # the writer task sends the diag's lines
    diag = json.loads(lines[-1])
    assert diag["bus_errors"] >= 200 and diag["bus_timeouts"] >= 200, diag


def test_mcp23017_scl_held_low_skips_the_bus_and_recovers_when_it_is_free():
    """A slave holding SCL low (read on the clock pin between transfers): no transfer is tried (each would wait
    its timeout) and no nine-pulse recovery either (it cannot free a held clock); the scans go on with the last
    good readings, the host is told. Once SCL is high again the bus is recovered and the chips set up again."""

    from touchmove_fw import assemble

    cfg = config.get("mcp23017", {"leds": None, "buttons": ()})
    assert cfg["pins"]["scl"] == MCP23017Model.SCL
    models = [MCP23017Model(a) for a in cfg["i2c_addrs"]]
    app = assemble.build(cfg, machine)[0]
    drv = app.driver
    lines = []
    app.out.port = None
    app.out.write = lines.append
    app.start()
    start = bytes((0xFF, 0xFF, 0, 0, 0, 0, 0xFF, 0xFF))
    _mcp_set(models, start)
    t = 0
    for _ in range(10):
        t += 5
        app.scanner.scan(t)
        app.flush()
    for m in models:
        m.stuck = True  # were a transfer tried, it would wait the 1 ms timeout
    machine.set_input(MCP23017Model.SCL, 0)
    before = len(lines)
    t, times = _timed_scans(app, t, 250)  # a bit more than one heartbeat
    assert times[125] < 1000, times[125]  # no timeout waited
    assert drv.timeouts == 0 and drv.recoveries == 0 and drv.scl_low == 250, (drv.timeouts, drv.recoveries)
    out = [json.loads(x) for x in lines[before:]]
    assert not [m for m in out if m["type"] in ("lift", "place")], out
    errs = [m["why"] for m in out if m["type"] == "error"]
    assert errs and "SCL held low in" in errs[0], errs
    before = len(lines)
    # the slave lets go, after a power cycle of the chips: a recovery, the set-up again, fresh readings
    machine.set_input(MCP23017Model.SCL, 1)
    for m in models:
        m.stuck = False
        m.regs[0] = m.regs[1] = m.regs[0x0C] = m.regs[0x0D] = 0xFF
    models[4].closed = 0  # rank 8 lifted
    for _ in range(10):
        t += 5
        app.scanner.scan(t)
        app.flush()
    assert drv.recoveries == 1 and all(m.regs[0x0C] == 0x7F for m in models)
    out = [json.loads(x) for x in lines[before:]]
    assert [m["sq"] for m in out if m["type"] == "lift"][:1] == ["a8"], out
    app.command(b'{"cmd":"diag"}')
    app.flush(False)
    diag = json.loads(lines[-1])
    assert diag["bus_scl_low"] == 250 and diag["bus_timeouts"] == 0 and diag["usb_in_ep"] == 0, diag


def test_mcp23017_a_timeout_skips_the_rest_of_the_bus():
    """A transfer that times out (SCL held mid-transfer): the chips after it are not tried in that scan."""
    cfg = config.get("mcp23017", {})
    models = [MCP23017Model(a) for a in cfg["i2c_addrs"]]
    drv = mcp23017.from_config(cfg, machine, None)
    buf = bytearray(8)
    drv.read(buf)
    models[1].stuck = True
    calls = []
    real = drv.i2c.readfrom_mem_into

    def counted(addr, reg, into):
        calls.append(addr)
        return real(addr, reg, into)

    drv.i2c.readfrom_mem_into = counted
    drv.read(buf)
    assert calls == [0x20, 0x21] and drv.timeouts == 1 and drv.errors == 1, calls


def test_i2c_timeout_follows_the_bus_speed():
    """At 100 kHz a register read takes ~480 us: the timeout grows to 4 x that (2000 us) unless set."""
    cfg = config.get("mcp23017", {"i2c_freq": 100_000})
    for a in cfg["i2c_addrs"]:
        MCP23017Model(a)
    assert mcp23017.from_config(cfg, machine, None).i2c.timeout == 2000
    cfg = config.get("mcp23017", {"i2c_freq": 100_000, "i2c_timeout_us": 5000})
    assert mcp23017.from_config(cfg, machine, None).i2c.timeout == 5000


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
