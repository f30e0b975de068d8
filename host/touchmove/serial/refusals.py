"""Why a serial port cannot be opened, said to the operator with the fix (the bridge's log, ``touchmove doctor``):
:func:`diagnose` turns an open error into a reason and a fix; a port locked by another program names that
program (:func:`lock_holder`, from ``/proc/locks``)."""

from __future__ import annotations

import errno
import glob
import os
from pathlib import Path

_DIALOUT_FIX = ("add the bridge's user to the dialout group (sudo usermod -aG dialout $USER, then log in again) "
                "or install deploy/udev/99-touchmove.rules")
_BUSY_FIX = ("another program holds the port: ModemManager probing a new modem (sudo systemctl disable --now "
             "ModemManager, or the udev rule's ID_MM_DEVICE_IGNORE), a second `touchmove run`, mpremote, screen "
             "or minicom: close it")


def modem_manager_running() -> bool:
    """Return True when a ModemManager process runs on this host (it opens new USB serial ports to probe)."""
    for comm in glob.glob("/proc/[0-9]*/comm"):
        try:
            if Path(comm).read_text().strip() == "ModemManager":
                return True
        except OSError:
            continue
    return False


def lock_holder(path: str, locks: str = "/proc/locks") -> str | None:
    """Return who holds the lock on the device ``path`` (``pid N: its command line``), or None when nobody
    does or the host cannot tell (Linux lists every lock in ``/proc/locks``, by device and inode)."""
    try:
        st = os.stat(path)
        table = Path(locks).read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    where = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for row in table.splitlines():
        fields = row.split()
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == where and fields[4].isdigit():
            pid = int(fields[4])
            try:
                raw = Path(f"/proc/{pid}/cmdline").read_bytes()
                command = " ".join(raw.decode(errors="replace").split("\0")).strip()
            except OSError:
                command = ""
            return f"pid {pid}" + (f": {command[:120]}" if command else "")
    return None


def diagnose(path: str, exc: BaseException) -> tuple[str, str]:
    """Return (reason, fix) for a port that could not be opened."""
    code = getattr(exc, "errno", None)
    text = str(exc)
    if code in (errno.EACCES, errno.EPERM) or "Permission denied" in text:
        return "permission denied", _DIALOUT_FIX
    if code == errno.ENOENT or "No such file" in text:
        return "no such device", ("check the path (`touchmove doctor --ports` lists the serial devices); "
                                  "the board may have been unplugged")
    if code == errno.ENOTTY or "Inappropriate ioctl" in text:
        return "not a tty", f"{path} is not a serial device: fix --port or [serial] ports"
    if code == errno.EBUSY or "busy" in text.lower():
        running = " (ModemManager is running on this host)" if modem_manager_running() else ""
        return f"busy{running}", _BUSY_FIX
    if code in (errno.EAGAIN, errno.EWOULDBLOCK) or "exclusively lock" in text:
        holder = lock_holder(path)
        running = (f" ({holder})" if holder else
                   " (ModemManager is running on this host)" if modem_manager_running() else "")
        return f"locked by another program{running}", _BUSY_FIX
    if code == errno.EISDIR or os.path.isdir(path):
        return "a folder, not a serial device", "fix --port or [serial] ports"
    return " ".join(text.split()) or type(exc).__name__, "see `touchmove doctor --ports`"
