"""Tests of the pure firmware modules, in plain asserts so they run under CPython (pytest) and under
MicroPython (mp/mprun.py): the same code, both interpreters."""

import json

from touchmove_fw import commands, protocol
from touchmove_fw.clock import MASK, add, diff
from touchmove_fw.debounce import Debouncer
from touchmove_fw.evqueue import EventQueue
from touchmove_fw.link import LINE, NONE, TOO_LONG, LineAssembler, cdc_in_endpoint
from touchmove_fw.maps import build_map, led_map
from touchmove_fw.squares import START_OCC, index, name


def test_square_names():
    assert index("a1") == 0 and index("h1") == 7 and index("a2") == 8 and index("E4") == 28
    assert index("h8") == 63
    for bad in ("", "i1", "a9", "a0", "e22", None, 5):
        assert index(bad) == -1
    for i in range(64):
        assert index(name(i)) == i


def test_square_maps():
    ident = build_map(None)
    assert list(ident) == list(range(64))
    rot = build_map({"rotate": 180})
    assert all(rot[i] == 63 - i for i in range(64))
    r90 = build_map({"rotate": 90})
    assert sorted(r90) == list(range(64)) and r90[0] == 7  # a1 input lands on h1
    mirror = build_map({"mirror": True})
    assert mirror[0] == 7 and mirror[7] == 0 and mirror[8] == 15
    names = [name(63 - i) for i in range(64)]
    assert list(build_map(names)) == list(rot)
    for bad in (names[:63], ["a1"] * 64, {"rotate": 45}):
        try:
            build_map(bad)
        except ValueError:
            pass
        else:
            raise AssertionError(bad)


def test_led_maps():
    rows = led_map("rows")
    assert list(rows) == list(range(64))
    serp = led_map("serpentine")
    assert serp[index("a1")] == 0 and serp[index("h1")] == 7
    assert serp[index("h2")] == 8 and serp[index("a2")] == 15 and serp[index("a3")] == 16
    assert sorted(serp) == list(range(64))


def _deb(n=3, ms=0):
    events = []
    d = Debouncer(2, lambda j, s, t: events.append((j, s, t)), n, ms)
    d.reset(bytes(2))
    return d, events


def test_debounce_needs_n_equal_samples():
    d, ev = _deb(3)
    d.update(b"\x01\x00", 0)
    d.update(b"\x01\x00", 5)
    assert ev == []
    d.update(b"\x01\x00", 10)
    assert ev == [(0, 1, 10)]
    d.update(b"\x01\x00", 15)
    assert ev == [(0, 1, 10)] and d.get(0) == 1


def test_debounce_hides_chatter():
    d, ev = _deb(3)
    t = 0
    for pattern in (1, 0, 1, 1, 0, 1, 0, 0, 1, 1, 0):  # never 3 equal in a row away from stable (0)
        d.update(bytes((pattern << 4, 0)), t)
        t += 5
    assert ev == []
    for _ in range(3):
        d.update(b"\x00\x80", t)
        t += 5
    assert ev == [(15, 1, t - 5)]


def test_debounce_reset_forgets_pending_counts():
    d, ev = _deb(3)
    d.update(b"\x01\x00", 0)
    d.update(b"\x01\x00", 5)  # two of three samples...
    d.reset(bytes(2))  # ... then the board is re-primed (calibration)
    d.update(b"\x01\x00", 10)
    assert ev == []  # a fresh count: one sample is not enough


def test_debounce_time_mode():
    d, ev = _deb(1, ms=15)
    d.update(b"\x02\x00", 100)
    d.update(b"\x02\x00", 110)
    assert ev == []
    d.update(b"\x00\x00", 112)  # a glitch: restart
    d.update(b"\x02\x00", 113)
    d.update(b"\x02\x00", 127)
    assert ev == []
    d.update(b"\x02\x00", 128)
    assert ev == [(1, 1, 128)]


def test_debounce_many_inputs_at_once():
    d, ev = _deb(2)
    d.update(b"\xff\xff", 0)
    d.update(b"\xff\xff", 1)
    assert [e[0] for e in ev] == list(range(16)) and all(e[1] == 1 for e in ev)


def test_event_queue_ring():
    q = EventQueue(4)
    for i in range(10):
        assert q.push(i, 100 + i)
        assert q.peek_t(0) == 100 + i and q.pop() == i
    for i in range(4):
        assert q.push(i, i)
    assert not q.push(9, 9) and q.overflow and q.dropped == 1
    assert [q.pop() for _ in range(4)] == [0, 1, 2, 3]
    q.clear()
    assert q.n == 0 and not q.overflow


def test_device_time_wraps_at_2_30():
    """Device times are modulo 2**30 (small ints on every port); diff/add work across the wrap."""
    t0 = MASK - 5
    assert add(t0, 10) == 4 and diff(add(t0, 10), t0) == 10 and diff(t0, add(t0, 10)) == -10
    assert diff(0, MASK) == 1 and diff(2**29 - 1, 0) == 2**29 - 1 and diff(2**29, 0) == -(2**29)
    q = EventQueue(4)
    for t in (5, MASK, 0, add(MASK, 7)):
        q.push(1, t)
        assert q.peek_t() == t
        q.pop()
    ev = []
    d = Debouncer(1, lambda j, s, t: ev.append(t), 1, 15)
    t0 = MASK - 9  # a change spanning the wrap
    d.reset(b"\x00")
    d.update(b"\x01", t0)
    d.update(b"\x01", add(t0, 14))
    assert ev == []
    d.update(b"\x01", add(t0, 15))
    assert ev == [add(t0, 15)] and ev[0] == 5


class Small(int):
    """An int that records every operand and result outside a 32-bit port's small ints (31 bits: -2**30 ..
    2**30 - 1). There, such a value is a long int: an allocation, in the scan loop's clock arithmetic."""

    outside: list = []  # noqa: RUF012 (shared on purpose: one list for a test)

    def _op(self, o, v):
        for x in (int(self), int(o), v):
            if not -(2**30) <= x <= 2**30 - 1:
                Small.outside.append(x)
        return Small(v)

    def __add__(self, o):
        return self._op(o, int(self) + int(o))

    def __radd__(self, o):
        return self._op(o, int(o) + int(self))

    def __sub__(self, o):
        return self._op(o, int(self) - int(o))

    def __rsub__(self, o):
        return self._op(o, int(o) - int(self))

    def __and__(self, o):
        return self._op(o, int(self) & int(o))

    def __rand__(self, o):
        return self._op(o, int(o) & int(self))

    def __or__(self, o):
        return self._op(o, int(self) | int(o))

    def __ror__(self, o):
        return self._op(o, int(o) | int(self))


def test_device_time_arithmetic_stays_in_small_ints_near_the_wrap():
    """add() and diff() near 2**30 never form a value a 32-bit port must store as a long int."""
    Small.outside.clear()
    times = (0, 1, 2**29 - 1, 2**29, MASK - 1000, MASK - 5, MASK)
    steps = (0, 1, 10, 1000, 2**29 - 1, -1, -10, -1000, -(2**29))
    for a in times:
        for d in steps:
            r = int(add(Small(a), Small(d)))
            assert 0 <= r <= MASK and r == (a + d) % (MASK + 1), (a, d, r)
        for b in times:
            r = int(diff(Small(a), Small(b)))
            assert -(2**29) <= r < 2**29 and (b + r - a) % (MASK + 1) == 0, (a, b, r)
    assert Small.outside == [], Small.outside[:5]


def test_messages_are_exact():
    lift = protocol.msg("lift", protocol.square_fields(12), 3, 1234)
    # the check: zlib's CRC-32 of the bytes before ',"ck"' (binascii.crc32 of b'{"type":"lift",...,"t":1234}')
    assert lift == b'{"type":"lift","sq":"e2","seq":3,"t":1234,"ck":"9b06a4c9"}\n'
    assert protocol.occ_hex(START_OCC) == "ffff00000000ffff"
    assert protocol.occ_hex(bytes((1, 0, 0, 0, 0, 0, 0, 0x80))) == "8000000000000001"
    hello = protocol.msg("hello", protocol.hello_fields("0.1.0", "e661", 42), 0, 12)
    body = b'{"type":"hello","proto":1,"fw":"0.1.0","board":"e661","boot":42,"seq":0,"t":12'
    assert hello.startswith(body + b',"ck":"') and hello.endswith(b'"}\n') and len(hello) == len(body) + 18
    err = json.loads(protocol.msg("error", protocol.error_fields('bad "json"'), 1, 2))
    assert err["why"] == 'bad "json"' and err["seq"] == 1 and err["t"] == 2 and len(err["ck"]) == 8
    for data in (b"", b"a", bytes(range(256)), lift[:-18]):  # the fallback computes the same check
        assert protocol.crc32_bits(data) == protocol.crc32(data) & 0xFFFFFFFF, data
    pong = json.loads(protocol.msg("pong", protocol.pong_fields("x\n"), 1, 2))
    assert pong["id"] == "x\n"


def _cmd_error(line):
    try:
        commands.parse_command(line)
    except commands.CommandError as exc:
        return str(exc)
    return None


def test_parse_commands():
    assert commands.parse_command(b'{"cmd":"hello"}')[0] == "hello"
    assert commands.parse_command(b'{"cmd":"ping","id":-5}')[1]["id"] == -5
    clear, squares, color = commands.parse_leds({"cmd": "leds", "squares": ["e2", "E4"], "color": [0, 32, 0]})
    assert (clear, squares, color) == (False, [12, 28], (0, 32, 0))
    assert commands.parse_leds({"cmd": "leds", "clear": True}) == (True, [], (0, 0, 0))
    for bad in (b"", b"{", b"1", b"null", b'{"cmd":null}', b'{"cmd":"x"}', b'{"cmd":"ping","id":1.5}',
                b'{"cmd":"ping","id":"' + b"x" * 40 + b'"}', b'{"cmd":"leds","squares":"e2"}',
                b'{"cmd":"leds","clear":1}', b'{"cmd":"leds","squares":[],"color":[1,2]}',
                b"\xff\xfe", b'{"cmd":"leds","squares":[' + b'"a1",' * 70 + b'"a1"]}'):
        assert _cmd_error(bad), bad


#: A CDC ACM configuration descriptor laid out as TinyUSB's TUD_CDC_DESCRIPTOR makes it (USB CDC 1.2): the
#: configuration, an interface association, the control interface (class 2) with its functional descriptors and
#: an interrupt IN endpoint (0x81), the data interface (class 0x0A) with bulk OUT 0x02 and bulk IN 0x82.
CDC_CFG = bytes([
    9, 2, 75, 0, 2, 1, 0, 0x80, 125,
    8, 11, 0, 2, 2, 2, 0, 0,
    9, 4, 0, 0, 1, 2, 2, 0, 4,
    5, 0x24, 0, 0x20, 1,
    5, 0x24, 1, 0, 1,
    4, 0x24, 2, 6,
    5, 0x24, 6, 0, 1,
    7, 5, 0x81, 3, 8, 0, 16,
    9, 4, 1, 0, 2, 0x0A, 0, 0, 0,
    7, 5, 0x02, 2, 64, 0, 0,
    7, 5, 0x82, 2, 64, 0, 0,
])


def test_cdc_in_endpoint_is_read_from_the_descriptor():
    """The output's chunk path watches the CDC data interface's bulk IN endpoint: taken from the descriptor, not
    the control interface's interrupt IN (0x81) before it; 0 (no chunk path) when there is none or the bytes end."""
    assert len(CDC_CFG) == 75
    assert cdc_in_endpoint(CDC_CFG) == 2
    moved = bytearray(CDC_CFG)
    moved[-5] = 0x83  # the data IN on endpoint 3
    assert cdc_in_endpoint(moved) == 3
    assert cdc_in_endpoint(CDC_CFG[:-7]) == 0  # the data interface has no IN endpoint
    assert cdc_in_endpoint(CDC_CFG[:-3]) == 0  # cut inside the last endpoint
    assert cdc_in_endpoint(CDC_CFG[:55]) == 0  # only the control interface
    assert cdc_in_endpoint(b"") == 0 and cdc_in_endpoint(bytes([0, 0, 0])) == 0


def test_line_assembler():
    la = LineAssembler(8)
    got = []
    for b in b'ab\r\n\n\r\ncd\n0123456789\nok\n':
        r = la.feed(b)
        if r == LINE:
            got.append(la.line())
        elif r == TOO_LONG:
            got.append("long")
        else:
            assert r == NONE
    assert got == [b"ab", b"cd", "long", b"ok"], got


def test_each_driver_scans_at_a_rate_its_scan_fits():
    """Scan rates from the scan costs measured on the emulated Pico (config.SCAN_US): a scan takes at most half
    its slot, at the default rate and at the limit, and check() refuses a rate above the limit. Before, the
    limits came from estimates: matrix could be set to 250 Hz (a 3.4 ms scan in a 4 ms slot, 80 % of the CPU)
    and hall_mux ran at 100 Hz (9 ms in 10)."""
    from touchmove_fw import config

    want = {"hc165": 200, "matrix": 125, "mcp23017": 200, "hall_mux": 50}
    for driver, hz in want.items():
        cfg = config.get(driver, {})
        assert cfg["scan_hz"] == hz, (driver, cfg["scan_hz"])
        config.check(cfg)
        top = config.MAX_SCAN_HZ[driver]
        for rate in (hz, top):
            assert 2 * config.SCAN_US[driver] <= 1000 * (1000 // rate), (driver, rate)  # half the slot
        assert 2 * config.SCAN_US[driver] > 1000 * (1000 // (top + 1)) or 1000 // (top + 1) == 1000 // top, driver
        too_fast = dict(cfg, scan_hz=config.MAX_SCAN_HZ[driver] + 1)
        try:
            config.check(too_fast)
        except ValueError as exc:
            assert "scan_hz" in str(exc) and driver in str(exc), exc
        else:
            raise AssertionError(driver + " accepted " + str(too_fast["scan_hz"]) + " Hz")
    assert config.MAX_SCAN_HZ["hall_mux"] < 200 <= config.MAX_SCAN_HZ["mcp23017"]
