"""A private Mosquitto on a free loopback port, for the demo, the tests and the benchmark."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

MOSQUITTO_PATHS = ("mosquitto", "/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def listens(pid: int, port: int) -> bool:
    """Return whether process ``pid`` has a TCP socket listening on ``port`` (IPv4), read from ``/proc``; where
    there is no ``/proc`` (not Linux), whether anything accepts a connection on 127.0.0.1:``port``."""
    if not os.path.exists("/proc/net/tcp"):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            return False
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):  # closed while read
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:["):
                    inodes.add(link[len("socket:["):-1])
        with open("/proc/net/tcp", encoding="ascii") as table:
            rows = [line.split() for line in table.readlines()[1:]]
    except OSError:
        return False   # the process is gone
    # columns: sl, local address (hex ip:port), remote address, state (0A: LISTEN), ..., inode (the tenth)
    return any(row[3] == "0A" and int(row[1].split(":")[1], 16) == port and row[9] in inodes for row in rows)


def mosquitto_binary() -> str | None:
    for name in MOSQUITTO_PATHS:
        found = shutil.which(name)
        if found:
            return found
    return None


class PortTaken(RuntimeError):
    """Another process listens on the port Mosquitto was to listen on."""


class LocalBroker:
    """``with LocalBroker() as b:`` runs ``mosquitto`` on ``127.0.0.1:b.port`` until the block ends (the port
    given, else a free one chosen by the first :meth:`start`)."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or 0
        self.host = "127.0.0.1"
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None

    @staticmethod
    def available() -> bool:
        return mosquitto_binary() is not None

    @property
    def url(self) -> str:
        return f"mqtt://{self.host}:{self.port}"

    def start(self, timeout: float = 5.0) -> LocalBroker:
        """Start Mosquitto and wait until it listens; return self. A port this broker chose that another
        process took before Mosquitto could listen on it (parallel tests pick free ports too) is chosen again,
        up to three times; a port given is kept."""
        if self.port:
            return self._start(timeout)
        for attempt in range(3):
            self.port = free_port()
            try:
                return self._start(timeout)
            except PortTaken:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _start(self, timeout: float) -> LocalBroker:
        binary = mosquitto_binary()
        if binary is None:
            raise RuntimeError("mosquitto is not installed (apt-get install mosquitto)")
        self._dir = tempfile.TemporaryDirectory(prefix="touchmove-mosquitto-")
        conf = Path(self._dir.name) / "mosquitto.conf"
        conf.write_text(
            f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
            "max_queued_messages 100000\nlog_dest stderr\nlog_type error\n",
            encoding="utf-8",
        )
        self._proc = subprocess.Popen([binary, "-c", str(conf)], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                err = self._proc.stderr.read().decode(errors="replace") if self._proc.stderr else ""
                self.stop()
                if "Address already in use" in err:
                    raise PortTaken(f"port {self.port} is taken: {err.strip()}")
                raise RuntimeError(f"mosquitto exited at start: {err.strip()}")
            if listens(self._proc.pid, self.port):
                return self
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"mosquitto did not listen on port {self.port} within {timeout} s")

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            if self._proc.stderr:
                self._proc.stderr.close()
            self._proc = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def __enter__(self) -> LocalBroker:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
