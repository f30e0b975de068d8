# The app under MicroPython: commands, the byte-by-byte reader with hostile input, LEDs, the watchdog
# supervisor, queue overflow.
import asyncio
import json
import random

import machine
import neopixel
from touchmove_fw import config
from touchmove_fw.app import App, make_leds
from touchmove_fw.clock import SteppedClock
from touchmove_fw.drivers import sim
from touchmove_fw.link import LINE, TOO_LONG, LineAssembler


def setup():
    machine.reset_fakes()


class Board:
    """A driver whose raw bits the test sets directly."""

    def __init__(self):
        self.bits = bytearray((0xFF, 0xFF, 0, 0, 0, 0, 0xFF, 0xFF))

    def read(self, buf):
        for k in range(8):
            buf[k] = self.bits[k]


def make_app(leds=True, **over):
    cfg = config.get("sim", {"timeline": None})
    cfg.update(over)
    lines = []
    clock = SteppedClock()
    strip = neopixel.NeoPixel(machine.Pin(22), 64) if leds else None
    app = App(cfg, Board(), clock, lines.append, "abcd", 7, None, make_leds(cfg, strip) if leds else None)
    app.lines = lines
    app.strip = strip
    app.start()
    return app


def checked(line):
    """The record on a device line, its check ("ck", the CRC-32 of the bytes before ',"ck"') verified and
    removed."""
    import binascii

    i = line.rindex(',"ck":"')
    obj = json.loads(line)
    assert obj.pop("ck") == "%08x" % (binascii.crc32(line[:i].encode()) & 0xFFFFFFFF), line
    return obj


def msgs(app):
    return [checked(x) for x in app.lines]


def feed(app, data):
    la = app.la if hasattr(app, "la") else LineAssembler()
    app.la = la
    for b in data:
        r = la.feed(b)
        if r == LINE:
            app.command(la.line())
        elif r == TOO_LONG:
            app.out.error("line too long")


def check_stream(app):
    out = msgs(app)
    for i, m in enumerate(out):
        assert m["seq"] == i, (i, m)
        assert isinstance(m["t"], int)
        assert isinstance(m["type"], str)
    return out


def test_hello_and_snapshot_at_start():
    out = msgs(make_app())
    import sys

    mp = "%d.%d.%d" % sys.implementation.version[:3]
    assert out[0] == {"type": "hello", "proto": 1, "fw": "touchmove/0.1.0", "board": "abcd", "boot": 7,
                      "name": "touchmove", "mp": mp, "seq": 0, "t": 0}
    assert out[1] == {"type": "snapshot", "occ": "ffff00000000ffff", "seq": 1, "t": 0}
    assert app_line_keys(make_app()) == ["type", "proto", "fw", "board", "boot", "name", "mp", "seq", "t", "ck"]


def app_line_keys(app):
    line = app.lines[0]
    keys = []
    i = 0
    while True:
        i = line.find('"', i)
        if i < 0:
            break
        j = line.find('"', i + 1)
        if line[j + 1] == ":":
            keys.append(line[i + 1:j])
        i = j + 1
    return keys


def test_commands():
    app = make_app()
    feed(app, b'{"cmd":"ping","id":5}\n{"cmd":"ping","id":"x"}\r\n{"cmd":"snapshot"}\n{"cmd":"hello"}\n')
    out = check_stream(app)[2:]
    assert [m["type"] for m in out] == ["pong", "pong", "snapshot", "hello", "snapshot"]
    assert out[0]["id"] == 5 and out[1]["id"] == "x"


def test_malformed_commands_get_errors():
    app = make_app()
    bad = [b"nonsense", b"[1,2]", b'{"cmd":1}', b'{"cmd":"fly"}', b'{"cmd":"ping","id":true}',
           b'{"cmd":"leds","squares":["z9"],"color":[1,2,3]}', b'{"cmd":"leds","color":[1,2,300]}',
           b'{"cmd":"leds"}', b'{"cmd":"calibrate"}', b'{"cmd":"ping"', b"\xff\xfe\x03"]
    for line in bad:
        feed(app, line + b"\n")
    out = check_stream(app)[2:]
    assert [m["type"] for m in out] == ["error"] * len(bad), out
    assert out[3]["why"] == "unknown cmd"


def test_overlong_line_is_discarded_whole():
    app = make_app()
    feed(app, b'{"cmd":"ping","id":1,"pad":"' + b"x" * 600 + b'"}\n{"cmd":"ping","id":2}\n')
    out = check_stream(app)[2:]
    assert [m["type"] for m in out] == ["error", "pong"]
    assert out[0]["why"] == "line too long" and out[1]["id"] == 2


def test_ctrl_c_bytes_are_data():
    app = make_app()
    feed(app, b'\x03\x03{"cmd":"ping","id":3}\n\x03\n')
    out = check_stream(app)[2:]
    assert [m["type"] for m in out] == ["error", "error"]  # the 0x03s made both lines bad JSON


def test_fuzz_reader_never_crashes():
    random.seed(11)
    app = make_app()
    good = [b'{"cmd":"ping","id":9}', b'{"cmd":"snapshot"}', b'{"cmd":"leds","clear":true}',
            b'{"cmd":"leds","squares":["e2"],"color":[255,255,255]}']
    for _ in range(300):
        kind = random.getrandbits(2)
        if kind == 0:
            data = bytes(random.getrandbits(8) for _ in range(random.getrandbits(6)))
        elif kind == 1:
            g = good[random.getrandbits(2)]
            data = g[: random.getrandbits(5)]  # truncated
        elif kind == 2:
            data = b"\x03" * random.getrandbits(3) + good[random.getrandbits(2)]
        else:
            data = good[random.getrandbits(2)] + b"\r\n"
        feed(app, data)
    feed(app, b'\n{"cmd":"ping","id":42}\n')
    out = check_stream(app)
    assert out[-1] == {"type": "pong", "id": 42, "seq": len(out) - 1, "t": out[-1]["t"]}


def test_leds_with_brightness_cap():
    app = make_app(leds=True)
    feed(app, b'{"cmd":"leds","squares":["a1","e2","h8"],"color":[255,255,255]}\n')
    cap = app.leds.cap
    v = (255 * cap + 127) // 255
    assert app.strip.pixels[0] == (v, v, v)  # a1: LED 0
    assert app.strip.pixels[11] == (v, v, v)  # e2: the second row runs backwards (serpentine) -> LED 11
    assert app.strip.pixels[56] == (v, v, v)  # h8: row 8 runs backwards -> LED 56
    assert sum(1 for p in app.strip.pixels if p != (0, 0, 0)) == 3
    feed(app, b'{"cmd":"leds","clear":true}\n')
    assert all(p == (0, 0, 0) for p in app.strip.pixels)
    assert len(app.lines) == 2  # no reply on success


def test_no_leds_is_an_error():
    app = make_app(leds=False)
    feed(app, b'{"cmd":"leds","clear":true}\n')
    assert msgs(app)[-1]["why"] == "no leds"


def test_overflow_sends_snapshot_instead():
    app = make_app(queue=4)
    board = app.driver
    s = app.scanner
    t = 0
    for k in range(2, 6):  # 32 squares fill in at once: far more than 4 events
        board.bits[k] = 0xFF
    for _ in range(6):
        t += 5
        s.scan(t)
    assert app.q.overflow
    app.flush()
    out = check_stream(app)[2:]
    assert [m["type"] for m in out] == ["snapshot"]
    assert out[0]["occ"] == "ffffffffffffffff"
    board.bits[2] = 0  # 8 more changes: 4 fit, 4 are dropped
    for _ in range(6):
        t += 5
        s.scan(t)
    assert app.q.overflow and app.q.n == 4
    app.flush()
    out = check_stream(app)[3:]
    assert [m["type"] for m in out] == ["snapshot"]  # the backlog is discarded, the snapshot replaces it
    assert out[0]["occ"] == "ffffffffff00ffff"
    board.bits[3] = 0x0F  # back to normal: single events again
    for _ in range(6):
        t += 5
        s.scan(t)
    app.flush()
    out = check_stream(app)[4:]
    assert [(m["type"], m["sq"]) for m in out] == [("lift", f + "4") for f in "efgh"]


def test_watchdog_fed_only_while_scanning():
    app = make_app()
    wdt = machine.WDT(timeout=2000)

    async def main():
        app.running = True
        sup = asyncio.create_task(app.supervisor_task(wdt, 10))
        scan = asyncio.create_task(app.scan_task())
        # fed every 10 ms while the scan runs: three feeds within 2 s even on a loaded machine (the process may
        # not run for a while; what is tested is that it feeds, not how fast the host schedules it)
        for _ in range(200):
            await asyncio.sleep_ms(10)
            if machine.WDT_FEEDS[0] >= 3:
                break
        fed = machine.WDT_FEEDS[0]
        assert fed >= 3, fed
        app.stop_when = lambda t: True  # the scan task ends (as if it died)
        await scan
        app.running = True  # ... while the supervisor would go on
        before = machine.WDT_FEEDS[0]
        await asyncio.sleep_ms(60)
        assert machine.WDT_FEEDS[0] <= before + 1, (before, machine.WDT_FEEDS[0])
        app.running = False
        await sup

    asyncio.run(main())


def test_scan_task_exception_is_fatal():
    app = make_app()

    class Broken:
        def read(self, buf):
            raise OSError(5)

    app.scanner.driver = Broken()
    try:
        asyncio.run(app.run())
    except OSError:
        pass
    else:
        raise AssertionError("a dead scan task must end the firmware (main.py then resets)")


def test_sim_clock_buttons():
    clock = SteppedClock()
    board = sim.SimBoard(['{"t":50,"type":"clock","side":"black"}', '{"t":400,"type":"clock","side":"white"}'],
                         clock)
    cfg = config.get("sim", {"timeline": None, "button_ids": ("clock_white", "clock_black")})
    lines = []
    app = App(cfg, board, clock, lines.append, "00", 1, sim.SimButtons(board))
    app.stop_when = lambda t: board.done(t - 300)
    asyncio.run(app.run())
    out = [json.loads(x) for x in lines]
    assert [(m["type"], m.get("id")) for m in out if m["type"] == "button"] == [
        ("button", "clock_black"), ("button", "clock_white")]


class ByteStream:
    """Command bytes as the reader gets them (a first byte awaited, the rest read while waiting);
    ``on_byte(i)`` runs as byte i is handed over."""

    def __init__(self, data, on_byte=None):
        self.data = bytearray(data)
        self.i = 0
        self.on_byte = on_byte

    async def readinto(self, buf):
        return self.take(buf)

    def take(self, buf):
        if self.i >= len(self.data):
            return 0
        if self.on_byte is not None:
            self.on_byte(self.i)
        buf[0] = self.data[self.i]
        self.i += 1
        return 1

    def waiting(self):
        if self.on_byte is not None:
            self.on_byte(-1)
        return self.i < len(self.data)

    def read_byte(self):
        one = bytearray(1)
        return one[0] if self.take(one) else -1


_hog = [None]  # one slot, made before memory runs out


def _exhaust_memory():
    """Allocate until nothing is left (a chain of blocks: a growing list would fail on its own growth)."""
    chain = None
    size = 4096
    while size >= 1:
        try:
            chain = (bytearray(size), chain)
        except MemoryError:
            size //= 2
    _hog[0] = chain


def test_memory_exhausted_in_the_command_path_never_ends_the_reader():
    """A MemoryError while a command is read or carried out (the line copy, the flush, the lazy import of
    commands.py, the reply) costs that command only: the reader goes on and answers the next ones, and the
    host hears how many commands were lost once memory is back."""
    app = make_app(leds=False)
    first = b'{"cmd":"ping","id":1}\n'
    data = first + b'{"cmd":"ping","id":2}\n{"cmd":"ping","id":3}\n'
    state = {"hogging": False}

    def on_byte(i):
        if i == len(first) - 1:  # the first line's newline: the heap is full while that command runs
            _exhaust_memory()
            state["hogging"] = True
        elif state["hogging"] and i != len(first) - 1:
            _hog[0] = None  # the next read: memory is back
            state["hogging"] = False

    s = ByteStream(data, on_byte)
    app.running = True

    async def main():
        await app.reader_task(s, s)

    try:
        asyncio.run(main())
    finally:
        _hog[0] = None
    app.scanner.heartbeat_due = True
    app.flush()
    out = check_stream(app)
    pongs = [m["id"] for m in out if m["type"] == "pong"]
    assert 1 not in pongs, out  # memory ran out for it
    assert 2 in pongs and 3 in pongs, out
    errs = [m["why"] for m in out if m["type"] == "error"]
    assert any("out of memory" in w for w in errs), errs


def _frame_ma(pixels):
    """The LEDs' current for a frame: 20 mA a channel at 255 (WS2812B), linear in the value."""
    return sum(r + g + b for r, g, b in pixels) * 20 / 255


def test_leds_never_draw_more_than_the_profiles_budget():
    """Whatever the host asks for, the frame a strip shows stays within the profile's LED budget (issue 25:
    300 mA for hc165 / matrix / mcp23017, 150 mA for hall_mux, whose 64 sensors take up to 192 mA); colours
    keep their proportions, and a frame within the budget is shown exactly as asked."""
    for profile, budget in (("hc165", 300), ("matrix", 300), ("mcp23017", 300), ("hall_mux", 150)):
        cfg = config.get(profile, {})
        assert cfg["leds"]["budget_ma"] == budget, (profile, cfg["leds"])
        strip = neopixel.NeoPixel(machine.Pin(22), 64)
        leds = make_leds(cfg, strip)
        leds.set(range(64), (255, 255, 255))  # 64 white: 64 x 3 x 24 = 4608 channel units, ~361 mA
        leds.show()
        assert _frame_ma(strip.shown) <= budget, (profile, _frame_ma(strip.shown))
        assert _frame_ma(strip.shown) >= 0.9 * budget, (profile, _frame_ma(strip.shown))
        assert len(set(strip.shown)) == 1 and strip.shown[0][0] == strip.shown[0][1] == strip.shown[0][2]
        leds.clear()
        leds.set(range(64), (255, 0, 128))  # a colour: its proportions are kept
        leds.show()
        r, g, b = strip.shown[5]
        assert g == 0 and abs(r - 2 * b) <= 1 and _frame_ma(strip.shown) <= budget, strip.shown[5]
        leds.clear()
        leds.set((0, 9, 63), (255, 255, 255))  # a few squares: within the budget, shown as asked
        leds.show()
        v = (255 * leds.cap + 127) // 255
        # a1 -> LED 0, b2 -> LED 14 and h8 -> LED 56 (serpentine rows)
        assert strip.shown[0] == strip.shown[14] == strip.shown[56] == (v, v, v), strip.shown
        assert sum(1 for p in strip.shown if p != (0, 0, 0)) == 3, strip.shown
        # a board.json asking for more than USB gives (it accepts up to 5,000 mA) gets the USB limit
        cfg = config.get(profile, {"leds": dict(cfg["leds"], budget_ma=5000, cap=255)})
        strip = neopixel.NeoPixel(machine.Pin(22), 64)
        leds = make_leds(cfg, strip)
        leds.set(range(64), (255, 255, 255))
        leds.show()
        assert budget * 0.9 <= _frame_ma(strip.shown) <= budget, (profile, _frame_ma(strip.shown))
