# A board that must not scan: board.json is malformed or has a bad value, the MicroPython is too old, or the
# start-up failed. Resetting would only meet the same fault again (a boot loop), and starting with the
# defaults would hide it. So the board stays up and tells the host: a hello (the host knows which board) and
# an error record with the sentence, again at every hello command and every 10 s; a ping gets its pong;
# every other command gets the error. Ctrl-C works here (mpremote can fix board.json), and so does safe boot.
from . import FW_ID, FW_NAME, protocol
from .link import LINE, TOO_LONG, LineAssembler, Output

try:
    from micropython import const
except ImportError:  # CPython

    def const(x):
        return x


REPEAT_MS = const(10000)
DRAIN_MS = const(2000)  # at the end of the stream, the longest wait for the queued output to be written


def serve(cfg, why, port, board_id, boot, clock, until=None):
    """Answer the host until the stream ends (the unix port; a board's never does) or ``until(out)`` says
    so (tests). Returns the Output (tests read seq and what was sent)."""
    import sys

    from .clock import diff

    about = protocol.about_fields(FW_NAME, sys.implementation.version, cfg.get("reset_cause"))
    out = Output(None, clock, port)
    out.open()
    la = LineAssembler()
    why = "firmware not started: " + why

    def hello():
        out.send("hello", protocol.hello_fields(FW_ID, board_id, boot, 1, about))
        out.error(why)

    hello()
    last = clock.ms()
    while until is None or not until(out):
        out.pump()
        if diff(clock.ms(), last) >= REPEAT_MS:
            last = clock.ms()
            out.error(why)
        if not port.waiting():
            clock.pause(10)
            continue
        b = port.read_byte()
        if b < 0:
            break
        r = la.feed(b)
        if r == LINE:
            _command(out, la.line(), why, hello)
        elif r == TOO_LONG:
            out.error("line too long")
    # The stream ended (the unix port's stdin; a board's never does): what is still queued goes out whole, for
    # up to DRAIN_MS, not a pump's budget (under load one pump wrote half a line and the process exited).
    t_end = clock.ms()
    while out.pump() and diff(clock.ms(), t_end) < DRAIN_MS:
        clock.pause(1)
    return out


def _command(out, line, why, hello):
    from .commands import CommandError, parse_command

    try:
        cmd, obj = parse_command(line)
    except CommandError as exc:
        out.error(exc.args[0])
        return
    except Exception:  # MemoryError: answer nothing, keep serving
        return
    if cmd == "hello":
        hello()
    elif cmd == "ping":
        out.send("pong", protocol.pong_fields(obj.get("id", 0)))
    else:
        out.error(why)


def serve_board(cfg, why):
    """serve() on the board's own link (USB CDC or the UART) with its real clock; never returns on a board."""
    import sys

    from .clock import Clock
    from .link import Port

    try:
        import machine

        board_id = "".join("%02x" % x for x in machine.unique_id())
    except Exception:
        machine = None
        board_id = "00"
    if cfg.get("link") == "uart" and machine is not None:
        p = cfg["pins"]
        uart = machine.UART(cfg.get("uart_id", 0), baudrate=cfg.get("uart_baud", 115200), bits=8, parity=None,
                            stop=1, tx=machine.Pin(p["uart_tx"]), rx=machine.Pin(p["uart_rx"]), timeout=0)
        port = Port(uart, uart)
    else:
        port = Port(getattr(sys.stdout, "buffer", sys.stdout), getattr(sys.stdin, "buffer", sys.stdin),
                    cfg.get("port") != "esp32")
    serve(cfg, why, port, board_id, 0, Clock())
