"""A board process on a pseudo-terminal: the firmware under MicroPython (or any program speaking protocol v1
on stdin/stdout) made to look like a USB serial board, for the demo, the tests and the benchmark.

The process's stdio is relayed to the master side of a pty; the slave side is what the daemon opens, through
a stable symlink (like ``/dev/serial/by-id/...``). The relay can *unplug* (close the pty: the daemon's read
fails; what the board says meanwhile is lost, as on a real cable) and *replug* (a new pty behind the same
symlink), and the process can be *rebooted* (killed and started again: a new boot).
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import threading
import tty
from collections.abc import Sequence


class PtyBoard:
    def __init__(self, argv: Sequence[str], link_path: str, *, env: dict[str, str] | None = None,
                 cwd: str | None = None, stderr: int | None = subprocess.DEVNULL,
                 queue_before_start: bool = False) -> None:
        self.argv = list(argv)
        self.link_path = link_path
        self.env = env
        self.cwd = cwd
        self.stderr = stderr
        self.proc: subprocess.Popen[bytes] | None = None
        self._master: int | None = None
        self._slave: int | None = None
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self.written = 0           # bytes relayed board -> daemon
        self.commands: list[bytes] = []   # what the daemon sent, line by line (kept short)
        # Bytes the daemon wrote while no board process ran: dropped (a board without power), or, with
        # queue_before_start, handed to the process when it starts (a USB serial device enumerates before its
        # program runs, and its program then reads what the host wrote meanwhile).
        self.queue_before_start = queue_before_start
        self._queued = bytearray()
        self._stopping = False

    # -- the pty ------------------------------------------------------------------------------------------
    def plug(self) -> str:
        """Create a pty and point the symlink at its slave; return the slave's path."""
        master, slave = os.openpty()
        tty.setraw(slave)            # no echo, no line editing until the daemon configures the port
        name = os.ttyname(slave)
        with self._lock:
            self._master, self._slave = master, slave
        tmp = f"{self.link_path}.tmp"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        os.symlink(name, tmp)
        os.replace(tmp, self.link_path)
        thread = threading.Thread(target=self._from_daemon, args=(master,), daemon=True)
        thread.start()
        self._threads.append(thread)
        return name

    def unplug(self) -> None:
        """Remove the symlink and close the pty: the daemon sees the port vanish."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.link_path)
        with self._lock:
            master, slave = self._master, self._slave
            self._master = self._slave = None
        for fd in (master, slave):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)

    @property
    def plugged(self) -> bool:
        return self._master is not None

    # -- the process --------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start (or restart) the board process."""
        proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=self.stderr, env=self.env, cwd=self.cwd, bufsize=0)
        with self._lock:
            queued, self._queued = bytes(self._queued), bytearray()
            if queued and proc.stdin is not None:
                with contextlib.suppress(OSError, ValueError):
                    proc.stdin.write(queued)
            self.proc = proc
        thread = threading.Thread(target=self._to_daemon, args=(self.proc,), daemon=True)
        thread.start()
        self._threads.append(thread)

    def reboot(self) -> None:
        """Kill the board process and start it again (a power cycle)."""
        self.kill()
        self.start()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def wait(self, timeout: float | None = None) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)

    def stop(self) -> None:
        self._stopping = True
        self.kill()
        self.unplug()

    # -- relays -------------------------------------------------------------------------------------------
    def _to_daemon(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        while True:
            try:
                data = os.read(fd, 4096)
            except OSError:
                break
            if not data:
                break
            with self._lock:
                master = self._master
            if master is None:
                continue                 # unplugged: the board's words are lost
            view = memoryview(data)
            while view:
                try:
                    n = os.write(master, view)
                except OSError:
                    break
                view = view[n:]
                self.written += n

    def _from_daemon(self, master: int) -> None:
        pending = b""
        while True:
            try:
                ready, _, _ = select.select([master], [], [], 0.2)
            except (OSError, ValueError):
                return
            with self._lock:
                if self._master != master:
                    return
            if not ready:
                continue
            try:
                data = os.read(master, 4096)
            except OSError:
                continue                 # no daemon on the slave side right now
            if not data:
                continue
            pending += data
            *lines, pending = pending.split(b"\n")
            if len(self.commands) < 10_000:
                self.commands.extend(lines)
            with self._lock:
                proc = self.proc
                if proc is None and self.queue_before_start:
                    self._queued += data
            if proc is not None and proc.stdin is not None and proc.poll() is None:
                with contextlib.suppress(OSError, ValueError):
                    proc.stdin.write(data)
