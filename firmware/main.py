# touchmove firmware entry point: everything lives in the touchmove_fw package. A fatal error is reported on
# the wire as an "error" record (never a traceback: stdout is the NDJSON link), then the board resets (on the
# PC simulation, the traceback goes to stderr and the process exits non-zero). A fault found at start-up (a bad
# board.json, a too old MicroPython, a build that failed) is not fatal: resetting would meet it again, a boot
# loop. The board then stays up without scanning and tells the host what is wrong (touchmove_fw/halted.py).
import gc

app = None
try:
    from touchmove_fw import board

    cfg = board.setup()  # the checked configuration; None on a safe boot; cfg["fault"] set when it is wrong
    board.unload()  # the set-up code is not needed any more: give its RAM back
    del board
    gc.collect()
    job = None
    if cfg is not None and not cfg.get("fault"):
        from touchmove_fw import assemble

        job = assemble.start(cfg)  # (app, ...); None with cfg["fault"] set when a board's build failed
        del assemble
        gc.collect()
    if job is not None:
        del cfg
        app = job[0]
        from touchmove_fw.app import run

        run(*job)
    elif cfg is not None:
        from touchmove_fw.halted import serve_board

        serve_board(cfg, cfg["fault"])
except (SystemExit, KeyboardInterrupt):  # KeyboardInterrupt: Ctrl-C on a halted board, to the REPL
    raise
except BaseException as exc:  # anything that escapes is fatal
    from touchmove_fw.fatal import report

    report(exc, app)
