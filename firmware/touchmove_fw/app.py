# The firmware's tasks: scan, write, read commands, supervise. Hardware comes in from board.py (or a test):
# nothing below imports machine.
import asyncio
import gc

from . import FW_VERSION, protocol
from .evqueue import BUTTON0, STATE, EventQueue
from .leds import Leds
from .link import LINE, TOO_LONG, LineAssembler, Output
from .scan import Scanner
from .squares import build_map


class App:
    def __init__(self, cfg, driver, clock, write, board_id="00", boot=0, buttons=None, leds=None):
        self.cfg = cfg
        self.driver = driver
        self.clock = clock
        self.board_id = board_id
        self.boot = boot
        self.button_ids = tuple(cfg.get("button_ids") or cfg.get("buttons") or ())
        self.q = EventQueue(cfg["queue"])
        self.scanner = Scanner(
            driver, build_map(cfg["square_map"]), self.q, buttons, cfg["active_low"],
            cfg["debounce_n"], cfg["debounce_ms"], cfg["heartbeat_ms"],
        )
        self.out = Output(write, clock)
        self.leds = leds  # a leds.Leds, or None
        self.period = max(1, 1000 // cfg["scan_hz"])
        self.wake = asyncio.Event()
        self.running = False
        self.stop_when = None  # callable(t) -> bool, checked every scan (the sim's end)
        self.fatal = None
        self.memstats = None  # a dict when measuring heap use (tests)

    # ---- messages ----
    def send_hello(self):
        self.out.send("hello", protocol.hello_fields(FW_VERSION, self.board_id, self.boot))

    def send_snapshot(self, kind="snapshot", t=-1):
        self.out.send(kind, protocol.occ_fields(self.scanner.occupancy()), t)

    def flush(self):
        """Write out everything the scan task has queued (synchronously, in order)."""
        q = self.q
        out = self.out
        if q.overflow:
            # the backlog is incomplete: discard it and let the host resync from the current state
            q.clear()
            self.send_snapshot()
        while q.n:
            t = q.peek_t(out.last_t)
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
            self.send_snapshot("heartbeat", self.scanner.heartbeat_t)
            self._collect()

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
        self.flush()  # earlier events go out first, so t stays in order
        try:
            cmd, obj = protocol.parse_command(line)
            if cmd == "hello":
                self.send_hello()
                self.send_snapshot()
            elif cmd == "snapshot":
                self.send_snapshot()
            elif cmd == "ping":
                self.out.send("pong", protocol.pong_fields(obj.get("id", 0)))
            elif cmd == "leds":
                self.do_leds(obj)
            elif cmd == "calibrate":
                self.do_calibrate()
        except protocol.CommandError as exc:
            self.out.error(exc.args[0] if exc.args else "bad command")
        except Exception:  # never crash on input
            self.out.error("internal error")

    def do_leds(self, obj):
        clear, squares, color = protocol.parse_leds(obj)
        if self.leds is None:
            raise protocol.CommandError("no leds")
        if clear:
            self.leds.clear()
        if squares:
            self.leds.set(squares, color)
        self.leds.show()

    def do_calibrate(self):
        cal = getattr(self.driver, "calibrate", None)
        if cal is None:
            raise protocol.CommandError("calibrate needs an analog (hall_mux) board")
        th = cal(self.cfg.get("calibration_delta", 4000))
        path = self.cfg.get("calibration_file")
        if path:
            from .drivers.hall_mux import save_thresholds

            try:
                save_thresholds(path, th)
            except OSError:
                raise protocol.CommandError("calibrated, but could not save")
        self.scanner.prime(self.clock.ms())  # the board (empty) as it now reads
        self.send_snapshot()

    # ---- tasks ----
    async def scan_task(self):
        clock = self.clock
        scanner = self.scanner
        q = self.q
        wake = self.wake
        period = self.period
        next_t = clock.ms()
        try:
            while self.running:
                t = clock.ms()
                scanner.scan(t)
                if q.n or q.overflow or scanner.heartbeat_due:
                    wake.set()
                if self.stop_when is not None and self.stop_when(t):
                    break
                next_t += period
                d = next_t - clock.ms()
                if d < 0:  # overran: don't try to catch up with a burst of scans
                    next_t -= d
                    d = 0
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

    async def reader_task(self, stream):
        la = LineAssembler()
        one = bytearray(1)
        while self.running:
            try:
                n = await stream.readinto(one)
            except OSError:  # the link went away (a closed pty): stop reading, keep reporting
                return
            if not n:
                return  # EOF: no more commands (the board keeps reporting)
            r = la.feed(one[0])
            if r == LINE:
                self.command(la.line())
            elif r == TOO_LONG:
                self.flush()
                self.out.error("line too long")

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
        begin = getattr(self.driver, "begin", None)
        if begin is not None:
            begin()  # heavy driver set-up (the sim's timeline), after the set-up code is unloaded
        self.scanner.prime(self.clock.ms())
        self.send_hello()
        self.send_snapshot()

    async def run(self, stream=None, wdt=None):
        self.start()
        scan = asyncio.create_task(self.scan_task())
        writer = asyncio.create_task(self.writer_task())
        others = []
        if stream is not None:
            others.append(asyncio.create_task(self.reader_task(stream)))
        if wdt is not None:
            others.append(asyncio.create_task(self.supervisor_task(wdt, self.cfg["wdt_ms"] // 4)))
        await writer
        await scan
        for task in others:
            task.cancel()
        if self.fatal is not None:
            raise self.fatal


def make_leds(cfg, strip):
    from .squares import led_map

    spec = cfg["leds"]
    return Leds(strip, led_map(spec.get("layout", "serpentine"), spec.get("rotate", 0)), spec.get("cap", 24))


def run(app, stream=None, wdt=None, cleanup=None):
    """Run until the end (the sim's), restoring the terminal and reporting heap use if asked."""
    try:
        asyncio.run(app.run(stream, wdt))
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
    m["device_ms"] = app.clock.ms()
    m["dropped"] = app.q.dropped
    m["messages"] = app.out.seq
    sys.stderr.write("memstats " + __import__("json").dumps(m) + "\n")
