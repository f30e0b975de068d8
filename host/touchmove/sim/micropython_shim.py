"""The firmware's sim board under CPython, for ``touchmove demo`` where MicroPython is not installed.

``python -m touchmove.sim.micropython_shim FIRMWARE/main.py`` gives CPython the few parts of MicroPython's unix port
the firmware uses with the ``sim`` driver (``micropython.const``, ``time.ticks_ms``, ``asyncio.sleep_ms``, an
``asyncio.StreamReader`` over a file, ``sys.print_exception``), then runs ``main.py`` as MicroPython would: the
serial link is stdin/stdout, tracebacks go to stderr. The firmware's tests run it under the real MicroPython;
``pip install 'touchmove[sim]'`` gives the demo that one too.
"""

from __future__ import annotations

import asyncio
import os
import runpy
import select as _select
import sys
import time
import traceback
import types
from typing import Any, TextIO

TICKS_PERIOD = 1 << 30          # MicroPython's ticks wrap at 2**30
_T0 = time.monotonic_ns()


def ticks_ms() -> int:
    """Return milliseconds since start, wrapping as MicroPython's ``time.ticks_ms``."""
    return ((time.monotonic_ns() - _T0) // 1_000_000) % TICKS_PERIOD


def ticks_us() -> int:
    """Return microseconds since start, wrapping as MicroPython's ``time.ticks_us``."""
    return ((time.monotonic_ns() - _T0) // 1_000) % TICKS_PERIOD


def ticks_diff(end: int, start: int) -> int:
    """Return ``end - start`` for wrapping tick values."""
    return ((end - start + TICKS_PERIOD // 2) % TICKS_PERIOD) - TICKS_PERIOD // 2


async def sleep_ms(ms: int) -> None:
    await asyncio.sleep(ms / 1000)


class StreamReader:
    """MicroPython's ``asyncio.StreamReader(stream)``: ``await readinto(buf)`` on a file descriptor."""

    def __init__(self, stream: Any) -> None:
        self.fd: int = stream.fileno()

    async def readinto(self, buf: bytearray) -> int:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()

        def readable() -> None:
            if not ready.done():
                ready.set_result(None)

        loop.add_reader(self.fd, readable)
        try:
            await ready
        finally:
            loop.remove_reader(self.fd)
        data = os.read(self.fd, len(buf))     # readable: returns at once (b"" at end of input)
        buf[:len(data)] = data
        return len(data)


class RawOutput:
    """An unbuffered binary stdout whose ``write`` writes everything, as MicroPython's does."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, data: str | bytes | bytearray | memoryview) -> int:
        view = memoryview(data.encode() if isinstance(data, str) else data)
        while view:
            view = view[os.write(self.fd, view):]
        return len(data)

    def flush(self) -> None:
        return None

    def fileno(self) -> int:
        return self.fd


class RawInput:
    """An unbuffered binary stdin: ``readinto`` takes only what the descriptor has, as MicroPython's does.

    CPython's ``sys.stdin.buffer`` is a buffered reader: a read of one byte pulls the rest of the line into
    Python's buffer, where the firmware's poll of the descriptor no longer sees it (the line is then garbled).
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def readinto(self, buf: bytearray | memoryview) -> int:
        """Return the number of bytes read into ``buf`` (0 at the end of input)."""
        data = os.read(self.fd, len(buf))
        buf[:len(data)] = data
        return len(data)

    def read(self, n: int = -1) -> bytes:
        """Return up to ``n`` bytes (one read of the descriptor)."""
        return os.read(self.fd, n if n > 0 else 4096)

    def fileno(self) -> int:
        return self.fd


class TextInput:
    """``sys.stdin`` with its raw, unbuffered ``buffer`` (the firmware reads commands from it)."""

    def __init__(self, fd: int) -> None:
        self.buffer = RawInput(fd)

    def fileno(self) -> int:
        return self.buffer.fd


class Poll:
    """MicroPython's ``select.poll()`` with its ``ipoll``, over CPython's poll (the firmware's non-blocking link)."""

    def __init__(self) -> None:
        self._poll = _select.poll()
        self._streams: dict[int, Any] = {}

    def register(self, stream: Any, events: int = _select.POLLIN | _select.POLLOUT) -> None:
        fd = stream if isinstance(stream, int) else stream.fileno()
        self._streams[fd] = stream
        self._poll.register(fd, events)

    def unregister(self, stream: Any) -> None:
        fd = stream if isinstance(stream, int) else stream.fileno()
        self._streams.pop(fd, None)
        self._poll.unregister(fd)

    def poll(self, timeout: int = -1) -> list[tuple[Any, int]]:
        return [(self._streams[fd], ev) for fd, ev in self._poll.poll(None if timeout < 0 else timeout)]

    def ipoll(self, timeout: int = -1, flags: int = 0) -> list[tuple[Any, int]]:
        return self.poll(timeout)


class TextOutput:
    """``sys.stdout`` with its raw ``buffer``: text written is encoded and sent at once."""

    def __init__(self, fd: int) -> None:
        self.buffer = RawOutput(fd)

    def write(self, text: str) -> int:
        return self.buffer.write(text)

    def flush(self) -> None:
        return None


def print_exception(exc: BaseException, file: TextIO | None = None) -> None:
    traceback.print_exception(exc, file=file if file is not None else sys.stdout)


def install() -> None:
    """Give this CPython process the MicroPython parts the firmware uses."""
    micropython = types.ModuleType("micropython")
    sys.modules["micropython"] = micropython
    parts: list[tuple[object, str, object]] = [
        (micropython, "const", lambda value: value),
        (micropython, "kbd_intr", lambda char: None),
        (micropython, "heap_lock", lambda: 0),
        (micropython, "heap_unlock", lambda: 0),
        (time, "ticks_ms", ticks_ms),
        (time, "ticks_diff", ticks_diff),
        (time, "ticks_us", ticks_us),
        (time, "sleep_ms", lambda ms: time.sleep(ms / 1000)),
        (time, "sleep_us", lambda us: time.sleep(us / 1_000_000)),
        (time, "ticks_add", lambda ticks, delta: (ticks + delta) % TICKS_PERIOD),
        (asyncio, "sleep_ms", sleep_ms),
        (asyncio, "StreamReader", StreamReader),
        (sys, "print_exception", print_exception),
        (sys, "stdout", TextOutput(sys.stdout.fileno())),
        (sys, "stdin", TextInput(sys.stdin.fileno())),
    ]
    for module, name, value in parts:
        setattr(module, name, value)
    # the firmware polls its streams with MicroPython's select.poll() (ipoll); CPython's has no ipoll
    select = types.ModuleType("select")
    select.__dict__.update({k: v for k, v in vars(_select).items() if not k.startswith("__")})
    select.poll = Poll  # type: ignore[attr-defined]
    sys.modules["select"] = select


def main(argv: list[str]) -> int:
    """Run the firmware's ``main.py`` (``argv[0]``; the rest are its arguments); return its exit status."""
    if not argv:
        print("usage: python -m touchmove.sim.micropython_shim FIRMWARE/main.py [ARGS]", file=sys.stderr)
        return 2
    main_py = os.path.abspath(argv[0])
    install()
    sys.argv = [main_py, *argv[1:]]
    sys.path.insert(0, os.path.dirname(main_py))
    try:
        runpy.run_path(main_py, run_name="__main__")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
