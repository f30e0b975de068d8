# touchmove firmware entry point: everything lives in the touchmove_fw package. On a fatal error the board
# resets (on the PC simulation, the process exits non-zero).
import gc
import sys

try:
    from touchmove_fw import board

    job = board.setup()
    board.unload()  # the set-up code is not needed any more: give its RAM back
    del board
    gc.collect()
    if job is not None:
        from touchmove_fw.app import run

        run(*job)
except SystemExit:
    raise
except BaseException as exc:  # anything that escapes is fatal
    if sys.platform == "linux":  # the PC simulation: stdout is the wire, the traceback goes to stderr
        sys.print_exception(exc, sys.stderr)
        sys.exit(1)
    sys.print_exception(exc)
    import time

    import machine

    time.sleep_ms(500)  # let the traceback reach the host
    machine.reset()
