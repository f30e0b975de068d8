# The firmware's tasks: scan, write, read commands, supervise. Hardware comes in from board.py (or a test):
# nothing below imports machine.
import asyncio
import gc
import time

from . import FW_ID, FW_NAME, protocol
from .clock import add, diff
from .evqueue import BUTTON0, STATE, EventQueue
from .leds import BUDGET_MA, HALL_MUX_MA, USB_MA, Leds
from .link import LINE, NONE, PUMP_MS, READ_CHUNK, TOO_LONG, LineAssembler, Output
from .scan import Scanner

try:
    from micropython import const
except ImportError:  # CPython

    def const(x):
        return x


_WINDOW = const(256)
_ROOM = const(160)  # output room needed before an event or snapshot is formatted (the longest is ~110 B)


class App:
    def __init__(self, cfg, driver, clock, write, board_id="00", boot=0, buttons=None, leds=None, port=None):
        self.cfg = cfg
        self.driver = driver
        self.clock = clock
        self.board_id = board_id
        self.boot = boot
        self.button_ids = tuple(cfg.get("button_ids") or cfg.get("buttons") or ())
        import sys

        self.about = protocol.about_fields(FW_NAME, sys.implementation.version, cfg.get("reset_cause"))
        self.q = EventQueue(cfg["queue"])
        from .maps import build_map

        self.scanner = Scanner(
            driver, build_map(cfg["square_map"]), self.q, buttons, cfg["active_low"],
            cfg["debounce_n"], cfg["debounce_ms"], cfg["heartbeat_ms"],
        )
        self.out = Output(write, clock, port)
        self.handle = None  # commands.handle, loaded by start() (a first command must not wait for an import)
        self.pending = None  # an iterator of (kind, fields) still to send (diag), as the output has room ...
        self.pending_line = None  # ... and its next line, taken from it but not yet sent
        self.leds = leds  # a leds.Leds, or None
        self.period = max(1, 1000 // cfg["scan_hz"])
        self.wake = asyncio.Event()
        self.running = False
        self.stop_when = None  # callable(t) -> bool, checked every scan (the sim's end)
        self.fatal = None
        self.wdt = None  # the machine.WDT while running, or None
        self.next_t = clock.ms()  # device time the next scan is due (the writer writes until just before it)
        self.memstats = None  # a dict when measuring heap use (tests)
        self.errors_told = 0  # the driver's error count last reported to the host
        self.failed_commands = 0  # commands lost to an exception (reader_task), since boot ...
        self.failed_oom = 0  # ... of which to a MemoryError
        self.failed_told = 0  # the count last reported to the host
        self.answered = 0  # the last answer() queued: 2 hello + snapshot, 1 snapshot
        self.coalesced = 0  # hello/snapshot commands whose answer was already waiting unsent (answer())
        # scan statistics for diag (small ints, updated by the scan task without allocating)
        self.win_t0 = 0  # a window of _WINDOW scans gives the rate and the mean scan time
        self.win_n = 0
        self.win_us = 0
        self.scan_hz = 0
        self.scan_us = 0
        self.scan_us_max = 0  # since the last diag
        self.late_max = 0  # ms a scan started after its slot, since the last diag (loop jitter)

    # ---- messages ----
    def send_hello(self):
        rate = self.cfg.get("speed", 1) if self.cfg.get("driver") == "sim" else 1
        return self.out.send("hello", protocol.hello_fields(FW_ID, self.board_id, self.boot, rate, self.about))

    def send_snapshot(self, kind="snapshot", t=-1):
        return self.out.send(kind, protocol.occ_fields(self.scanner.occupancy()), t)

    def answer(self, hello):
        """The answer to a ``hello`` (hello + snapshot) or a ``snapshot`` command, unless the same answer is the
        last thing queued and not a byte of it is written yet: a backlog of the same command (a host that asked
        again and again while the board could not answer, as a bridge did while an emulated Pico booted slowly:
        ~300 hellos) gets one answer, not one each crowding its events out of the output. Events since would
        have been queued after that answer, so it still gives the board as it stands."""
        out = self.out
        n = 2 if hello else 1
        if self.answered == n and out.unsent_since_mark(n):
            self.coalesced += 1
            return
        out.mark()
        if hello:
            self.send_hello()
        self.send_snapshot()
        self.answered = n

    def flush(self, pump=True):
        """Move queued events into the output as far as it has room, then (``pump``) write what the port accepts
        now.

        Never waits for the host: what does not fit stays queued; if the queue overflowed meanwhile, the
        backlog is discarded and one snapshot (the current state) replaces it once there is room."""
        q = self.q
        out = self.out
        if pump and out.room() < _ROOM:  # make room first; otherwise write once, after formatting
            out.pump(self.write_ms())
        if q.overflow:
            if out.room() < _ROOM:
                return
            q.clear()  # the backlog is incomplete: the host resyncs from the current state
            self.send_snapshot()
        while q.n and out.room() >= _ROOM:
            t = q.peek_t()
            code = q.pop()
            subject = code & 0x7F
            if subject < 64:
                out.send("place" if code & STATE else "lift", protocol.square_fields(subject), t)
            else:
                b = subject - BUTTON0
                name = self.button_ids[b] if b < len(self.button_ids) else "button%d" % b
                out.send("button", protocol.button_fields(name), t)
        if self.scanner.heartbeat_due:
            self.scanner.heartbeat_due = False
            if out.room() >= _ROOM:  # a host that is not reading needs no heartbeat
                self.send_snapshot("heartbeat", self.scanner.heartbeat_t)
            drv = self.driver
            e = getattr(drv, "errors", 0)
            held = getattr(drv, "scl_low", 0)
            if e + held != self.errors_told and out.room() >= _ROOM:  # at most once a heartbeat
                self.errors_told = e + held
                out.error("sensor bus: %d errors since boot (%d timed out)%s, last good readings kept" % (
                    e, getattr(drv, "timeouts", 0), ", SCL held low in %d scans" % held if held else ""))
            f = self.failed_commands
            if f != self.failed_told and out.room() >= _ROOM:
                self.failed_told = f
                out.error("commands: %d since boot got no answer (%d out of memory)" % (f, self.failed_oom))
            self._collect()
        if self.pending is not None:
            self._send_pending()
        if pump:
            out.pump(self.write_ms())

    def write_ms(self):
        """How long a pump may write now: until 1 ms before the next scan is due (at least 1 ms, at most
        PUMP_MS). A scan is then late by at most about a byte's write, and the time the scan leaves free
        carries the output (a byte costs a poll and a write: on the emulated Pico about 0.3 ms)."""
        free = diff(self.next_t, self.clock.ms()) - 1
        return PUMP_MS if free >= PUMP_MS else (free if free > 1 else 1)

    def _send_pending(self):
        # The lines of a diag, one by one as the output has room for them: never more than it holds at once,
        # so none is lost however many there are (an analog board's diag is five lines, about 950 bytes).
        out = self.out
        while True:
            item = self.pending_line
            if item is None:
                try:
                    item = next(self.pending)
                except StopIteration:
                    self.pending = None
                    return
                self.pending_line = item
            try:
                if not out.send(item[0], item[1], -1, False):
                    return
            except MemoryError:  # a diag line is larger than most: on a fragmented heap it is dropped, the
                self.pending = self.pending_line = None  # host hears of it at the next heartbeat
                self.command_failed(True)
                return
            self.pending_line = None

    def send_lines(self, lines):
        """Send an iterator of (kind, fields) pairs whole, as the output has room (a diag): it replaces one
        still under way (whose line being sent goes out first)."""
        self.pending = lines
        self.wake.set()

    def _collect(self):
        # Once a second, off the scan path: keeps GC pauses small and predictable.
        m = self.memstats
        if m is not None:
            m["peak_alloc"] = max(m["peak_alloc"], gc.mem_alloc())
        gc.collect()
        if m is not None:
            m["peak_live"] = max(m["peak_live"], gc.mem_alloc())

    # ---- commands ----
    def command(self, line):
        """Carry out one host command line (commands.py, loaded by start()). Writes nothing itself: the writer
        task sends the reply, so a host that sends many commands cannot keep the scan waiting on the port."""
        self.flush(False)  # earlier events go into the output first, so t stays in order
        if self.handle is None:
            self.load_commands()
        self.handle(self, line)
        self.wake.set()

    def load_commands(self):
        """Import the command handler (start(): once, before the first scan, never between two scans)."""
        from .commands import handle

        self.handle = handle

    # ---- tasks ----
    async def scan_task(self):
        clock = self.clock
        scanner = self.scanner
        q = self.q
        out = self.out
        wake = self.wake
        period = self.period
        next_t = clock.ms()
        self.win_t0 = next_t
        try:
            while self.running:
                t = clock.ms()
                late = diff(t, next_t)
                if late > self.late_max:
                    self.late_max = late
                u0 = time.ticks_us()
                scanner.scan(t)
                u = time.ticks_diff(time.ticks_us(), u0)
                if u > self.scan_us_max:
                    self.scan_us_max = u
                self.win_us += u
                self.win_n += 1
                if self.win_n >= _WINDOW:
                    self.scan_us = self.win_us // _WINDOW
                    self.scan_hz = (_WINDOW * 1000) // max(1, diff(t, self.win_t0))
                    self.win_t0 = t
                    self.win_n = self.win_us = 0
                if q.n or q.overflow or scanner.heartbeat_due or out.end:
                    wake.set()
                if self.stop_when is not None and self.stop_when(t):
                    break
                next_t = add(next_t, period)
                d = diff(next_t, clock.ms())
                if d < 0:  # overran: don't try to catch up with a burst of scans
                    next_t = add(next_t, -d)
                    d = 0
                self.next_t = next_t
                await clock.sleep(d)
        except Exception as exc:
            self.fatal = exc
        self.running = False
        wake.set()

    async def writer_task(self):
        try:
            while self.running:
                await self.wake.wait()
                self.wake.clear()
                self.flush()
            self.flush()
        except Exception as exc:
            self.fatal = exc
            self.running = False

    async def reader_task(self, stream, inp=None):
        """Commands from the host: wait for a byte, then take the bytes already waiting (up to READ_CHUNK, for
        at most PUMP_MS) in the same pass. Nothing a command does ends this task: a command that fails (a
        MemoryError in the line copy, the flush, the lazy import of commands.py or the reply) is counted and reported
        (``failed_commands``), and the next one is read; only the link itself going away (EOF, OSError on
        the stream) ends it."""
        la = LineAssembler()
        one = bytearray(1)
        clock = self.clock
        while self.running:
            try:
                n = await stream.readinto(one)
            except OSError:  # the link went away (a closed pty): stop reading, keep reporting
                return
            except MemoryError:  # even awaiting a byte allocates: wait for the heap to recover
                self.command_failed(True)
                await asyncio.sleep_ms(10)
                continue
            if not n:
                return  # EOF: no more commands (the board keeps reporting)
            b = one[0]
            k = 0
            t0 = clock.ms()
            while True:
                r = la.feed(b)
                if r != NONE:
                    self.line_done(la, r)
                    # the scan goes first: a backlog of commands (a host that sent many at once) is carried
                    # out one per turn of the event loop, never several between two scans
                    await asyncio.sleep_ms(0)
                k += 1
                # a pass reads for at most PUMP_MS (a byte costs a poll and a read: a 60-byte command read in
                # one pass held the scan ~20 ms on the emulated Pico); the rest waits for the next turn
                if inp is None or k >= READ_CHUNK or diff(clock.ms(), t0) >= PUMP_MS or not inp.waiting():
                    break
                try:
                    b = inp.read_byte()
                except OSError:
                    return
                if b < 0:
                    return

    def line_done(self, la, r):
        """Carry out a complete command line (or answer an over-long one); never raises."""
        try:
            if r == LINE:
                self.command(la.line())
            elif r == TOO_LONG:
                self.flush()
                self.out.error("line too long")
        except Exception as exc:  # MemoryError above all: the board must keep answering
            self.command_failed(isinstance(exc, MemoryError))

    def command_failed(self, oom):
        """Count a command lost to an exception; the host is told at the next heartbeat (flush())."""
        self.failed_commands += 1
        if oom:
            self.failed_oom += 1
        gc.collect()

    async def supervisor_task(self, wdt, period_ms):
        # Feed the watchdog only while the scan task makes progress: a hung or dead scan task resets the board.
        last = -1
        while self.running:
            s = self.scanner.scans
            if s != last:
                last = s
                wdt.feed()
            await asyncio.sleep_ms(period_ms)

    def start(self):
        """Prime the debouncer with the board as it is and announce ourselves (hello, snapshot)."""
        self.running = True
        self.load_commands()
        begin = getattr(self.driver, "begin", None)
        if begin is not None:
            begin()  # heavy driver set-up (the sim's timeline), after the set-up code is unloaded
        self.out.open(self.cfg.get("driver") != "sim")  # a board may have reset mid-line: end that line first
        self.scanner.prime(self.clock.ms())
        self.send_hello()
        self.send_snapshot()
        self.out.pump()

    async def run(self, stream=None, wdt=None, inp=None):
        self.wdt = wdt  # the fatal path feeds it while it reports (fatal.py)
        self.start()
        scan = asyncio.create_task(self.scan_task())
        writer = asyncio.create_task(self.writer_task())
        others = []
        if stream is not None:
            others.append(asyncio.create_task(self.reader_task(stream, inp)))
        if wdt is not None:
            others.append(asyncio.create_task(self.supervisor_task(wdt, self.cfg["wdt_ms"] // 4)))
        await writer
        await scan
        for task in others:
            task.cancel()
        if self.fatal is not None:
            raise self.fatal


def make_leds(cfg, strip):
    from .maps import led_map

    spec = cfg["leds"]
    top = HALL_MUX_MA if cfg.get("driver") == "hall_mux" else USB_MA  # the USB limit, whatever board.json says
    return Leds(strip, led_map(spec.get("layout", "serpentine"), spec.get("rotate", 0)), spec.get("cap", 24),
                min(spec.get("budget_ma", BUDGET_MA), top))


def run(app, stream=None, wdt=None, cleanup=None, inp=None):
    """Run until the end (the sim's), restoring the terminal and reporting heap use if asked."""
    try:
        asyncio.run(app.run(stream, wdt, inp))
    finally:
        if cleanup:
            cleanup()
        if app.memstats is not None:
            report_mem(app)


def report_mem(app):
    import sys

    m = app.memstats
    gc.collect()
    m["end_live"] = gc.mem_alloc()
    m["heap"] = gc.mem_alloc() + gc.mem_free()
    m["scans"] = app.scanner.scans
    m["device_ms"] = app.out.wire_t
    m["dropped"] = app.q.dropped
    m["messages"] = app.out.seq
    sys.stderr.write("memstats " + __import__("json").dumps(m) + "\n")
