"""Files only their owner may read or write (mode 0600 from the moment they exist): the arbiters' token digests,
their revocations and the audit log, wherever the process runs (systemd's ``UMask=`` or not)."""

from __future__ import annotations

import os
from pathlib import Path

PRIVATE_MODE = 0o600


def append_private(path: Path, text: str, *, sync: bool = False) -> None:
    """Append ``text`` to ``path``, creating it with mode 0600 if it does not exist; fsync first if ``sync``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_MODE)
    with os.fdopen(fd, "a", encoding="utf-8") as fh:
        fh.write(text)
        if sync:
            fh.flush()
            os.fsync(fh.fileno())


def write_private(path: Path, text: str) -> None:
    """Write ``text`` as the whole of ``path`` (a new file, mode 0600) and put it in place in one step."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_MODE)
    os.fchmod(fd, PRIVATE_MODE)  # a stale .tmp from a crash keeps its old mode through O_CREAT
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)
