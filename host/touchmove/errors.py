"""The errors a subcommand reports to its user, and the exit statuses of the ``touchmove`` command.

Here rather than in :mod:`touchmove.cli` so that the modules the command line runs do not import it back.
"""

from __future__ import annotations

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130     # 128 + SIGINT, as a shell reports a program stopped by Ctrl-C
EXIT_BROKEN_PIPE = 141     # 128 + SIGPIPE: the reader of our output went away (``| head``)


class CommandError(Exception):
    """An error a subcommand reports to its user: the message is the whole story (no traceback)."""

    def __init__(self, message: str, status: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.status = status
