# touchmove firmware entry point: everything lives in the touchmove_fw package. A fatal error is reported on
# the wire as an "error" record (never a traceback: stdout is the NDJSON link), then the board resets (on the
# PC simulation, the traceback goes to stderr and the process exits non-zero).
import gc

app = None
try:
    from touchmove_fw import board

    cfg = board.setup()  # the checked configuration; None on a safe boot
    board.unload()  # the set-up code is not needed any more: give its RAM back
    del board
    gc.collect()
    if cfg is not None:
        from touchmove_fw import assemble

        job = assemble.build(cfg)
        assemble.unload()
        del assemble, cfg
        gc.collect()
        app = job[0]
        from touchmove_fw.app import run

        run(*job)
except SystemExit:
    raise
except BaseException as exc:  # anything that escapes is fatal
    from touchmove_fw.fatal import report

    report(exc, app)
