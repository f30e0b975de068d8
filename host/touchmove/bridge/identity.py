"""Board identity: a port keeps the board id of its first ``hello``. A later ``hello`` with another id on that
port, or a second port saying the id of a board that is online elsewhere, is an :class:`IdentityConflict`: the
bridge raises a ``board_identity`` alert and changes no binding (the second port is held back until the first
one closes). What the operator does: docs/bridge-faults.md#board-identity."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class IdentityConflict:
    """A ``hello`` that contradicts a binding: the port ``port`` said ``claimed`` although it serves ``bound``
    (the board's id changed), or although port ``held_by`` serves that id (two boards with one id)."""

    port: str
    claimed: str
    bound: str | None
    held_by: str | None
    since: str

    def message(self) -> str:
        """Return what happened and what the operator does, in one sentence each."""
        if self.bound is not None:
            return (f"port {self.port} serves board {self.bound} but its board now says it is {self.claimed!r}; "
                    f"the port stays with {self.bound}. If another board is on that port, unplug it and plug it "
                    f"in again (the port then takes the id it says); else correct the board's id.")
        return (f"port {self.port} says board {self.claimed!r}, which port {self.held_by} already serves; "
                f"{self.port} is held back (its lines are kept). Give one of the boards another id and plug it "
                f"in again; or, if the board moved, unplug {self.held_by}: {self.port} then takes over.")

    def as_dict(self) -> dict[str, Any]:
        return {"code": "board_identity", "port": self.port, "claimed": self.claimed, "bound": self.bound,
                "held_by": self.held_by, "since": self.since, "message": self.message()}
