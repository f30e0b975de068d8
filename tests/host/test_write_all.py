"""``write_all``, the one write loop of the bridge's links and of the port check (``touchmove ports``): all of
the data reaches a reader that reads, and a reader that never reads is a ``TimeoutError`` (an ``OSError``, as
the port check catches it) once the wait is over, not a hang."""

from __future__ import annotations

import os
import threading
import time

import pytest

from touchmove.serial.link import write_all


def test_everything_reaches_a_slow_reader() -> None:
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    data = os.urandom(1 << 20)              # more than a pipe holds: the loop waits for the reader
    got = bytearray()

    def read() -> None:
        while chunk := os.read(read_fd, 65536):
            got.extend(chunk)
            time.sleep(0.001)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        write_all(write_fd, data, within=10.0)
    finally:
        os.close(write_fd)
        reader.join(10)
        os.close(read_fd)
    assert bytes(got) == data


def test_a_reader_that_never_reads_is_a_timeout() -> None:
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    begin = time.monotonic()
    try:
        with pytest.raises(TimeoutError, match="the board does not read what is sent to it"):
            write_all(write_fd, b"x" * (1 << 20), within=0.3)
    finally:
        os.close(write_fd)
        os.close(read_fd)
    assert 0.3 <= time.monotonic() - begin < 3.0
    assert issubclass(TimeoutError, OSError)      # the port check's ``except OSError`` takes it
