"""The lichess stand-in as a process: Ctrl-C stops it at once, even with a push half received."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from touchmove.sim.local_broker import free_port


def test_ctrl_c_with_a_push_half_received_stops_the_stand_in_at_once(tmp_path: Path) -> None:
    """A client that sent a push's headers and part of its body (a broadcaster stopped mid-push) held the stand-in
    for aiohttp's 60 s shutdown wait after Ctrl-C (the club guide's test timed out waiting for it)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "touchmove.broadcast.lichess_standin", "--port", str(port),
                             "--out", str(tmp_path / "pushed")], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and "lichess stand-in on" in proc.stdout.readline()
        with socket.create_connection(("127.0.0.1", port)) as client:
            client.sendall(b"POST /api/broadcast/round/r1/push HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                           b"Authorization: Bearer t\r\nContent-Length: 1000\r\n\r\n[Event \"half")
            time.sleep(0.5)                    # the stand-in's handler is reading the body
            asked = time.monotonic()
            proc.send_signal(signal.SIGINT)
            status = proc.wait(timeout=30)
            took = time.monotonic() - asked
        assert status == 0
        assert took < 10, f"the stand-in took {took:.1f} s to stop"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
