
# The scan loop allocates nothing: every driver's scan runs with the heap locked (any allocation raises
# MemoryError), through debounce, button reads, the event queue, overflow and heartbeats.
import asyncio

import machine
import micropython
from hwmodels import HallModel, HC165Chain, MatrixModel, MCP23017Model, ScriptedBoard, ScriptedButtons
from touchmove_fw import config
from touchmove_fw.app import App
from touchmove_fw.buttons import PinButtons
from touchmove_fw.clock import SteppedClock
from touchmove_fw.drivers import hall_mux, hc165, matrix, mcp23017
from touchmove_fw.evqueue import EventQueue
from touchmove_fw.maps import build_map
from touchmove_fw.scan import Scanner


def setup():
    machine.reset_fakes()


def _locked_scans(scanner, flip, n=400, q=None):
    """Scan n times with the heap locked; flip(i) changes the scripted inputs (allocation-free)."""
    scanner.prime(0)
    q = scanner.queue
    popped = 0
    micropython.heap_lock()
    try:
        for i in range(n):
            flip(i)
            scanner.scan(5 * i)
            while q.n > 48:  # drain some, as the writer would (pop is allocation-free too)
                q.pop()
                popped += 1
    finally:
        micropython.heap_unlock()
    return popped + q.n


def _scanner(driver, active_low=True, buttons=None, qsize=64):
    q = EventQueue(qsize)
    return Scanner(driver, build_map({"rotate": 180}), q, buttons, active_low, 4, 0, 1000)


def _toggler(buf, period=20):
    # every `period` scans invert one byte of the scripted inputs (8 squares change at once)
    def flip(i):
        if i % period == 0:
            k = (i // period) & 7
            buf[k] ^= 0xFF
    return flip


def test_hc165_spi_scan_no_alloc():
    cfg = config.get("hc165", {})
    chain = HC165Chain(load=cfg["pins"]["load"], clk=cfg["pins"]["sck"], data=cfg["pins"]["miso"])
    machine.set_input(cfg["pins"]["clock_white"], 1)
    machine.set_input(cfg["pins"]["clock_black"], 1)
    buttons = PinButtons([machine.Pin(cfg["pins"]["clock_white"]), machine.Pin(cfg["pins"]["clock_black"])])
    s = _scanner(hc165.from_config(cfg, machine, None), buttons=buttons)
    flip = _toggler(chain.inputs)

    def both(i):
        flip(i)
        if i % 50 == 0:
            machine.set_input(cfg["pins"]["clock_white"], (i // 50) & 1)
    events = _locked_scans(s, both)
    assert events >= 100, events
    assert chain.clocks == 64 * chain.loads  # exactly one 64-bit read per scan
    assert s.heartbeat_due


def test_hc165_bitbang_scan_no_alloc():
    cfg = config.get("hc165", {"bitbang": True})
    chain = HC165Chain(load=cfg["pins"]["load"], clk=cfg["pins"]["sck"], data=cfg["pins"]["miso"])
    s = _scanner(hc165.from_config(cfg, machine, None))
    assert _locked_scans(s, _toggler(chain.inputs), 200) >= 50


def test_matrix_scan_no_alloc():
    cfg = config.get("matrix", {})
    p = cfg["pins"]
    model = MatrixModel([p["rank%d" % (r + 1)] for r in range(8)], [p["file_" + f] for f in "abcdefgh"])
    s = _scanner(matrix.from_config(cfg, machine, None))
    assert _locked_scans(s, _toggler(model.closed), 200) >= 50


def test_mcp23017_scan_no_alloc():
    cfg = config.get("mcp23017", {})
    models = [MCP23017Model(a) for a in cfg["i2c_addrs"]]
    s = _scanner(mcp23017.from_config(cfg, machine, None))

    def flip(i):
        if i % 20 == 0:
            m = models[(i // 20) & 3]
            m.closed ^= 0x00FF
    assert _locked_scans(s, flip, 200) >= 50


def test_hall_mux_scan_no_alloc():
    cfg = config.get("hall_mux", {"calibration_file": None})
    p = cfg["pins"]
    model = HallModel([p["s%d" % i] for i in range(4)], [p["sig"]], [p["en%d" % i] for i in range(4)])
    s = _scanner(hall_mux.from_config(cfg, machine, None), active_low=False)
    vals = model.values

    def flip(i):
        if i % 20 == 0:
            j = (i // 20) & 63
            vals[j] = 50000 if vals[j] < 40000 else 30000
    assert _locked_scans(s, flip, 200) >= 5


def test_queue_overflow_no_alloc():
    cfg = config.get("hc165", {})
    chain = HC165Chain(load=cfg["pins"]["load"], clk=cfg["pins"]["sck"], data=cfg["pins"]["miso"])
    s = _scanner(hc165.from_config(cfg, machine, None), qsize=8)
    s.prime(0)
    micropython.heap_lock()
    try:
        for i in range(40):
            if i % 10 == 0:
                for k in range(8):
                    chain.inputs[k] ^= 0xFF
            s.scan(5 * i)
    finally:
        micropython.heap_unlock()
    assert s.queue.overflow and s.queue.n == 8 and s.queue.dropped > 0


def _scripted_board(clock):
    # 60 moves on rank 2 with chatter (3 raw flips within 4 ms) and a clock press every 10 moves
    script = []
    presses = []
    t = 100
    for i in range(60):
        sq = 8 + (i & 7)
        script += [(t, sq, 0), (t + 2, sq, 1), (t + 4, sq, 0), (t + 200, sq, 1)]
        if i % 10 == 0:
            presses.append((t + 300, 1))
        t += 500
    return ScriptedBoard(clock, script, presses)


def _scan_locked(s, board, clock):
    """Scan the scripted board to its end every 5 ms with the heap locked; return how many events came."""
    s.prime(0)
    q = s.queue
    n = 0
    micropython.heap_lock()
    try:
        while not board.done(clock.now - 100):
            s.scan(clock.now)
            clock.now += 5
            while q.n:
                q.pop()
                n += 1
    finally:
        micropython.heap_unlock()
    return n


def test_scripted_board_scan_no_alloc():
    clock = SteppedClock()
    board = _scripted_board(clock)
    s = Scanner(board, build_map(None), EventQueue(64), ScriptedButtons(board), False, 4, 0, 1000)
    n = _scan_locked(s, board, clock)
    assert n == 120 + 6, n  # 60 lifts, 60 places, 6 button presses: no chatter


def test_time_mode_debounce_no_alloc():
    clock = SteppedClock()
    board = _scripted_board(clock)
    s = Scanner(board, build_map(None), EventQueue(64), None, False, 3, 15, 1000)
    n = _scan_locked(s, board, clock)
    assert n == 120, n


def test_scan_task_under_asyncio_no_alloc():
    # The whole scan task, scheduled by asyncio, with the heap locked for 300 scans (the writer is not
    # running: its formatting allocates by design, outside the scan path).
    clock = SteppedClock()
    board = _scripted_board(clock)
    cfg = config.get("sim", {"timeline": None})
    app = App(cfg, board, clock, lambda s: None, "00", 1, ScriptedButtons(board))
    app.running = True
    app.scanner.prime(0)
    done = []
    popped = [0]

    async def lock_for(scans):
        await asyncio.sleep_ms(0)
        start = app.scanner.scans
        micropython.heap_lock()
        try:
            while app.scanner.scans - start < scans and app.fatal is None:
                await asyncio.sleep_ms(0)
                while app.q.n:
                    app.q.pop()
                    popped[0] += 1
        finally:
            micropython.heap_unlock()
        app.running = False
        done.append(app.scanner.scans - start)

    woken = []

    async def writer_stand_in():
        # a task already waiting on the writer's event: the scan task's set() must wake it without
        # allocating (the real writer then formats lines, which allocates by design, off the scan path)
        await app.wake.wait()
        woken.append(app.scanner.scans)

    async def main():
        w = asyncio.create_task(writer_stand_in())
        t = asyncio.create_task(app.scan_task())
        await lock_for(1000)
        await t
        await w

    asyncio.run(main())
    assert app.fatal is None, app.fatal
    assert done[0] >= 1000 and popped[0] > 0 and woken and woken[0] > 5  # woken inside the locked run
