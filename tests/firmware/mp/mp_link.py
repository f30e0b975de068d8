
# The link under a host that stops reading: a fake USB CDC that behaves like MicroPython's rp2 port, the
# watchdog supervisor, chunked command reads, the UART link, device time across the 2**30 wrap.
import asyncio
import json

import machine
import micropython
from hwmodels import ScriptedBoard
from touchmove_fw import assemble, config
from touchmove_fw.app import App
from touchmove_fw.clock import MASK, Clock, SteppedClock, add, diff
from touchmove_fw.link import PUMP_MS, READ_CHUNK

TX_TIMEOUT_MS = 500  # MICROPY_HW_USB_CDC_TX_TIMEOUT on rp2


def setup():
    machine.reset_fakes()


class FakeCDC:
    """USB CDC as a MicroPython port drives it: a 256-byte TX FIFO the host empties when it reads. A write
    that does not fit waits up to TX_TIMEOUT_MS for the host (device time passes, nothing else runs), then
    takes what fits; the rest is not written.

    ``port="rp2"`` (MicroPython 1.22 and later): a poll says writable while the FIFO has any room (or nobody
    has the port open), and a write returns the count the FIFO took.
    ``port="esp32"`` (ESP32_GENERIC_S3): stdout goes to USB and to the UART REPL, and the write returns the
    full length whatever USB took (the UART took it all); the poll always says writable. So the count says
    nothing: the firmware can only see the stall in how long the write took."""

    def __init__(self, clock, size=256, port="rp2"):
        self.clock = clock
        self.port = port
        self.exact = port != "esp32"  # what Port.exact says for this port
        self.size = size
        self.fifo = bytearray()
        self.host = bytearray()  # what the host has read
        self.reading = True
        self.blocked_ms = 0
        self.blocks = 0
        self.longest_block = 0
        self.dropped = 0  # bytes a write said it took but USB did not (esp32)

    def ready(self):
        return self.port == "esp32" or len(self.fifo) < self.size

    def write(self, mv):
        n = len(mv)
        free = self.size - len(self.fifo)
        if n > free:
            if self.reading:
                self.host_read()
                free = self.size
            else:
                self.clock.now = add(self.clock.now, TX_TIMEOUT_MS)  # the whole board waits
                self.blocked_ms += TX_TIMEOUT_MS
                self.blocks += 1
        k = min(n, free)
        self.fifo += bytes(mv[:k])
        if self.port == "esp32":
            self.dropped += n - k
            return n
        return k

    def host_read(self):
        self.host += self.fifo
        self.fifo = bytearray()

    def lines(self, broken=None):
        """The messages the host got; a line that is not JSON fails, or is counted in ``broken`` (a list)."""
        text = bytes(self.host).decode()
        assert text.endswith("\n") or not text, text[-80:]
        out = []
        for x in text.splitlines():
            if not x:
                continue  # the host skips empty lines
            try:
                out.append(json.loads(x))
            except ValueError:
                if broken is None:
                    raise
                broken.append(x)
        return out


def _stall_run(port="rp2"):
    clock = SteppedClock()
    # pieces move all through the stall: a place and a lift every 150 ms for 12 s (more events than the
    # output buffer, the CDC FIFO and the event queue hold together)
    script = []
    t = 400
    for i in range(80):
        sq = 16 + (i % 32)
        script.append((t, sq, 1))
        script.append((t + 75, sq, 0))
        t += 150
    class Timed(ScriptedBoard):  # the longest time between two scans (device time)
        def read(self, buf):
            now = self.clock.ms()
            if gap[1] >= 0:
                gap[0] = max(gap[0], now - gap[1])
            gap[1] = now
            ScriptedBoard.read(self, buf)

    gap = [0, -1]
    board = Timed(clock, script)
    cfg = config.get("sim", {"timeline": None, "wdt_ms": 2000})
    cdc = FakeCDC(clock, port=port)
    app = App(cfg, board, clock, None, "ab", 1, None, None, cdc)
    stall = [1 << 29, 0]  # the scan counter at the stall's start and end

    async def host():
        while app.running:
            now = clock.ms()
            cdc.reading = not (1000 <= now < 11000)  # the host keeps the port open but stops reading
            if cdc.reading:
                cdc.host_read()
            elif now >= 1000:
                stall[0] = min(stall[0], app.scanner.scans)
                stall[1] = max(stall[1], app.scanner.scans)
            await asyncio.sleep_ms(0)

    async def main():
        app.stop_when = lambda t: t >= 14000
        h = asyncio.create_task(host())
        await app.run()
        app.running = False
        await h

    asyncio.run(main())
    cdc.host_read()
    return app, cdc, gap[0], stall, board


def test_a_host_that_stops_reading_never_stalls_scanning():
    app, cdc, max_gap, stall, board = _stall_run()
    # scanning went on through the 10 s stall without a single port wait: the writer hands the port one byte
    # at a time after a poll that says it has room, so no write ever waits (before, a 32-byte chunk into a
    # nearly full FIFO waited the TX timeout: 500 ms without a scan here, about 1 s on the emulated Pico)
    assert stall[1] - stall[0] > 1900, stall  # ~2000 scans at 200 Hz in 10 s
    assert cdc.blocks == 0 and cdc.blocked_ms == 0, (cdc.blocked_ms, cdc.blocks)
    assert max_gap <= 5 + PUMP_MS, max_gap
    # the host gets whole lines, seq without gaps, and once it reads again a snapshot of the board as it is
    msgs = cdc.lines()
    assert [m["seq"] for m in msgs] == list(range(len(msgs)))
    t_last = 0
    for m in msgs:
        assert m["t"] >= t_last
        t_last = m["t"]
    assert app.q.dropped > 0  # the queue overflowed during the stall ...
    late = [m for m in msgs if m["t"] >= 10900]
    snaps = [m for m in late if m["type"] == "snapshot"]
    assert snaps, [m["type"] for m in late][:10]  # ... so a snapshot followed when the host read again
    final = bytearray(8)
    board.read(final)
    occ = "".join("%02x" % final[7 - k] for k in range(8))
    hb = [m for m in msgs if m["type"] == "heartbeat"]
    assert hb[-1]["occ"] == occ and hb[-1]["t"] >= 13000
    # after the snapshot, the events again follow one by one
    after = [m for m in msgs if m["seq"] > snaps[0]["seq"] and m["type"] in ("lift", "place")]
    assert after, "events after the resync"


def test_esp32_s3_write_stalls_are_seen_by_their_time():
    """ESP32_GENERIC_S3: a write into a full USB FIFO waits 500 ms and still returns the full length, and the
    poll always says writable. The firmware sees the stall in how long the write took: it holds off writing
    (250 ms, doubling to 4 s) and a pump writes for a bounded time, so a 10 s stall costs a few waits, never
    one per chunk (before: 16 waits of 500 ms for one 512-byte buffer, 8 s without a scan). What the port
    may have dropped costs at most one broken line per stall (its rest is not sent; the host skips it and
    asks for a snapshot at the seq gap)."""
    app, cdc, max_gap, stall, _ = _stall_run(port="esp32")
    assert cdc.blocks <= 6 and cdc.blocked_ms <= 3000, (cdc.blocks, cdc.blocked_ms)
    assert max_gap <= TX_TIMEOUT_MS + PUMP_MS + 5 < app.cfg["wdt_ms"], max_gap
    assert stall[1] - stall[0] > 1000, stall
    broken = []
    msgs = cdc.lines(broken)
    assert len(broken) <= cdc.blocks, (broken, cdc.blocks)
    seqs = [m["seq"] for m in msgs]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert len(seqs) >= seqs[-1] + 1 - cdc.blocks, "at most one message lost a stall"
    assert [m for m in msgs if m["t"] >= 10900 and m["type"] == "snapshot"]


def test_the_old_blocking_writer_would_have_stalled():
    """The same stall with writes handed to the CDC whole (the old firmware): the board waits in writes."""
    clock = SteppedClock()
    cdc = FakeCDC(clock)
    cdc.reading = False
    line = b'{"type":"heartbeat","occ":"ffff00000000ffff","seq":12,"t":123456}\n'
    for _ in range(10):  # ten heartbeats into a full FIFO
        cdc.write(memoryview(line))
    assert cdc.blocked_ms >= 6 * TX_TIMEOUT_MS  # 3 s frozen: past a 2 s watchdog


def test_commands_are_read_in_chunks():
    clock = SteppedClock()
    cfg = config.get("sim", {"timeline": None})
    app = App(cfg, ScriptedBoard(clock, []), clock, None, "ab", 1)
    lines = []
    app.out.write = lines.append
    app.start()
    data = b'{"cmd":"ping","id":1}\n' * 8  # 176 bytes waiting at once

    class Stream(_Waiting):
        def __init__(self):
            super().__init__(data)
            self.reads = 0

        async def readinto(self, buf):  # the first byte of a pass, after the event loop's poll
            self.reads += 1
            return self.take(buf)

    s = Stream()
    app.running = True

    async def main():
        await app.reader_task(s, s)

    asyncio.run(main())
    pongs = [json.loads(x) for x in lines if '"pong"' in x]
    assert len(pongs) == 8
    assert s.reads == (len(data) + READ_CHUNK - 1) // READ_CHUNK + 1, s.reads  # +1: the read that saw EOF


def test_uart_link_has_its_pins():
    from hwmodels import HC165Chain

    for board in ("pico", "esp32s3_devkitc"):
        setup()
        cfg = config.get("hc165", {"board": board, "link": "uart", "leds": None})
        p = cfg["pins"]
        HC165Chain(spi_id=cfg["spi_id"], load=p["load"], clk=p["sck"], data=p["miso"])
        config.check(cfg)
        app, _, _, _, port = assemble.build(cfg, machine)
        assert port.out.tx.id == cfg["pins"]["uart_tx"] and port.out.rx.id == cfg["pins"]["uart_rx"]
        app.start()
        while app.out.pump():  # a pump writes for at most PUMP_MS
            pass
        written = b"".join(bytes(x) for x in port.out.written)
        assert b'"type":"hello"' in written and written.endswith(b"\n")


def test_device_time_wraps_without_allocating():
    clock = Clock(MASK - 20)
    t0 = clock.ms()
    import time

    time.sleep_ms(60)
    t1 = clock.ms()
    assert t1 < t0 and diff(t1, t0) >= 60, (t0, t1)  # wrapped, and still 60+ ms later
    micropython.heap_lock()
    try:
        for _ in range(1000):
            t = clock.ms()  # a small int for ever: no allocation
    finally:
        micropython.heap_unlock()
    assert 0 <= t < MASK


def test_events_across_the_wrap_keep_their_order_and_time():
    start = MASK - 1000  # 12.4 days of uptime, 1 s before the wrap
    clock = SteppedClock(start)
    script = [(600, 20, 1), (1400, 21, 1), (2600, 20, 0)]  # before, after the wrap

    class Rel(ScriptedBoard):
        def read(self, buf):
            real = self.clock.now
            self.clock.now = diff(real, start)  # the script in time since start
            try:
                ScriptedBoard.read(self, buf)
            finally:
                self.clock.now = real

    board = Rel(clock, script)
    cfg = config.get("sim", {"timeline": None})
    lines = []
    app = App(cfg, board, clock, lines.append, "ab", 1)
    app.stop_when = lambda t: diff(t, start) > 4000

    async def main():
        await app.run()

    asyncio.run(main())
    msgs = [json.loads(x) for x in lines]
    ev = [(m["type"], m["sq"], m["t"] - start) for m in msgs if m["type"] in ("lift", "place")]
    assert [(k, s) for k, s, _ in ev] == [("place", "e3"), ("place", "f3"), ("lift", "e3")], ev
    for (_, _, t), (want, _, _) in zip(ev, script):
        assert want <= t <= want + 30, (ev, script)
    ts = [m["t"] for m in msgs]
    assert ts == sorted(ts) and ts[-1] > MASK  # the wire carries the time unwrapped


def test_a_pump_writes_for_a_bounded_time():
    """A port whose writes are slow but each under the stall threshold (40 ms a 32-byte chunk here) would keep
    one pump writing for the whole buffer (16 chunks: 640 ms without a scan); a pump starts no write after
    PUMP_MS, so it lasts at most PUMP_MS plus one write."""
    from touchmove_fw.link import OUT_BUF, Output

    class SlowPort:
        exact = True

        def __init__(self, clock):
            self.clock = clock
            self.took = bytearray()

        def ready(self):
            return True

        def write(self, mv):
            self.clock.now = add(self.clock.now, 40)
            self.took += bytes(mv)
            return len(mv)

    clock = SteppedClock()
    port = SlowPort(clock)
    out = Output(None, clock, port)
    while out.send("heartbeat", ',"occ":"ffff00000000ffff"'):
        pass
    assert out.end > OUT_BUF - 100
    t0 = clock.ms()
    left = out.pump()
    assert clock.ms() - t0 <= PUMP_MS + 40 and left > 0, (clock.ms() - t0, left)
    while out.pump():  # later pumps send the rest, in order
        pass
    assert bytes(port.took).count(b"\n") == out.seq


class _Waiting:
    """Command bytes already waiting (the reader's stream and its poll), as the USB CDC's RX buffer holds them."""

    def __init__(self, data):
        self.data = bytearray(data)

    async def readinto(self, buf):
        return self.take(buf)

    def take(self, buf):
        if not self.data:
            return 0
        buf[0] = self.data[0]
        self.data = self.data[1:]
        return 1

    def waiting(self):
        return len(self.data) > 0

    def read_byte(self):
        one = bytearray(1)
        return one[0] if self.take(one) else -1


def test_a_backlog_of_commands_is_carried_out_between_scans():
    """A host that sent many commands at once (a busy bridge's hellos and snapshot requests, faster than the board
    answers): one command per turn of the event loop, so the scan runs between any two (before: every command
    of a 64-byte read pass one after the other, each writing its reply to the port, and on the emulated Pico
    scans 40 ms apart lost clock presses)."""
    clock = SteppedClock()
    cfg = config.get("sim", {"timeline": None})
    app = App(cfg, ScriptedBoard(clock, []), clock, None, "ab", 1)
    lines = []
    app.out.write = lines.append
    at = []  # the scan count when each command was carried out
    command = app.command

    def counted(line):
        at.append(app.scanner.scans)
        command(line)

    app.command = counted
    s = _Waiting(b'{"cmd":"snapshot"}\n' * 12)
    app.stop_when = lambda t: t >= 500

    asyncio.run(app.run(s, None, s))
    assert len(at) == 12, at
    assert all(at[i + 1] > at[i] for i in range(len(at) - 1)), at  # MicroPython has no itertools.pairwise
    assert len([x for x in lines if '"snapshot"' in x]) == 13  # the one at start and the 12 answers


def test_a_backlog_of_hellos_gets_one_answer():
    """300 hello commands while the host takes nothing (a bridge asking again every rescan while an emulated Pico
    booted slowly under load: ~300 hellos): one hello + snapshot waits in the output, not one per command (before:
    each was answered, the output filled after a few and the rest were lost, and the events behind them waited).
    Once that answer is out a hello is answered again; an event queued between two hellos makes the second
    one answered too (its snapshot is newer than the first's); snapshot commands coalesce the same way."""
    clock = SteppedClock()
    cfg = config.get("sim", {"timeline": None})
    board = ScriptedBoard(clock, [(200, 28, 1)])  # a piece comes down on e4 at 200 ms
    cdc = FakeCDC(clock)
    app = App(cfg, board, clock, None, "ab", 1, None, None, cdc)
    app.out.open()

    def scan_until(end):
        t = clock.ms()
        while t < end:
            t += 5
            clock.now = t
            app.scanner.scan(t)
            app.flush(False)

    scan_until(100)  # the starting position, debounced, out to the host
    while app.q.n or app.out.end > app.out.start:
        app.flush()
        cdc.host_read()
    cdc.host_read()
    cdc.host = bytearray()
    base = app.out.seq
    cdc.reading = False
    cdc.fifo = bytearray(cdc.size)  # TinyUSB's buffer full: nothing is written
    for _ in range(300):
        app.command(b'{"cmd":"hello"}')
        app.flush()
    assert app.out.seq == base + 2 and app.out.lost == 0 and app.coalesced == 299, (app.out.seq, app.out.lost)
    for _ in range(5):
        app.command(b'{"cmd":"snapshot"}')  # after a hello's answer: one snapshot, then coalesced
        app.flush()
    assert app.out.seq == base + 3 and app.coalesced == 303, (app.out.seq, app.coalesced)
    scan_until(260)  # e4's place is queued: the next hello is answered anew, the one after it is not
    app.command(b'{"cmd":"hello"}')
    app.command(b'{"cmd":"hello"}')
    app.flush()
    assert app.out.seq == base + 6 and app.coalesced == 304, (app.out.seq, app.coalesced)
    # the host reads again: all of it arrives, in order; then a hello is answered again
    cdc.fifo = bytearray()
    cdc.reading = True
    while app.out.pump():
        cdc.host_read()
    cdc.host_read()
    app.command(b'{"cmd":"hello"}')
    app.flush()
    while app.out.pump():
        cdc.host_read()
    cdc.host_read()
    kinds = [(m["type"], m.get("sq")) for m in cdc.lines()]
    assert kinds == [("hello", None), ("snapshot", None), ("snapshot", None), ("place", "e4"), ("hello", None),
                     ("snapshot", None), ("hello", None), ("snapshot", None)], kinds
    assert [m["seq"] for m in cdc.lines()] == list(range(base, base + 8))
