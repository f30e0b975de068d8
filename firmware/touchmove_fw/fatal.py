# The fatal path: an exception escaped the firmware. Tell the host on the wire with an "error" record (the
# NDJSON link must never carry a traceback), keep the traceback for diagnosis, then reset the board.
import sys

from . import protocol

try:
    from micropython import const
except ImportError:  # CPython

    def const(x):
        return x

MAX_WHY = const(120)


def why(exc):
    """'fatal: OSError: 5' - one short line."""
    text = "fatal: %s: %s" % (type(exc).__name__, exc)
    return text[:MAX_WHY]


def drain(out, ms, wdt=None):
    """Write out what is buffered, for at most ``ms``, feeding the watchdog (``wdt``) as it goes: each pump
    lasts at most link.PUMP_MS and never waits for the host, so the board cannot reset before last_error.txt
    is written, whatever wdt_ms."""
    import time

    t0 = time.ticks_ms()
    while True:
        if wdt is not None:
            wdt.feed()
        if not out.pump() or time.ticks_diff(time.ticks_ms(), t0) >= ms:
            break
        time.sleep_ms(5)


def report(exc, app=None):
    """Send the error record (through the app's output, in sequence, or as a lone line when the firmware
    never started), then reset; on the unix port print the traceback to stderr and exit 1."""
    w = why(exc)
    try:
        if app is not None:
            out = app.out
            if out.port is not None and out.room() < 200:
                # a host that is not reading: only the error matters now; a newline ends any line cut short
                out.buf[0] = 10
                out.start = 0
                out.end = 1
            out.error(w)
            drain(out, 300, getattr(app, "wdt", None))
        else:
            line = protocol.msg("error", protocol.error_fields(w), 0, 0)
            getattr(sys.stdout, "buffer", sys.stdout).write(line)
    except Exception:  # reporting must not stop the reset
        pass
    if sys.platform == "linux":  # the PC simulation
        sys.print_exception(exc, sys.stderr)
        sys.exit(1)
    try:
        wdt = getattr(app, "wdt", None)
        if wdt is not None:
            wdt.feed()  # a whole wdt_ms (>= 1000 ms) for the two small files below
        with open("last_error.txt", "w") as f:  # read it with mpremote after the reset
            sys.print_exception(exc, f)
        with open("fatal_reset", "w") as f:  # the next hello says "reset":"fatal" (board.reset_cause())
            f.write("1")
    except Exception:
        pass
    import machine

    machine.reset()
