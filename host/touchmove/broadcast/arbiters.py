"""``python -m touchmove.broadcast.arbiters ACTION FILE ...``: the old way to run ``touchmove arbiters``, kept.

Only an entry point, imported by nothing: the book of arbiters (tokens, revocations) is
:mod:`touchmove.broadcast.arbiter_book`, the subcommand :mod:`touchmove.broadcast.arbiter_accounts`.
"""

from __future__ import annotations

import sys

from touchmove.cli import main

if __name__ == "__main__":
    sys.exit(main(["arbiters", *sys.argv[1:]]))
