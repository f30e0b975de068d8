"""Every test (and every daemon or CLI it starts) signs engine checkpoints with a key of the test session, never
the user's own ``~/.local/state/touchmove/checkpoint.key``."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from touchmove.checkpoint import KEY_ENV


@pytest.fixture(scope="session", autouse=True)
def checkpoint_key(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = str(tmp_path_factory.mktemp("checkpoint-key") / "checkpoint.key")
    before = os.environ.get(KEY_ENV)
    os.environ[KEY_ENV] = path
    yield path
    if before is None:
        os.environ.pop(KEY_ENV, None)
    else:
        os.environ[KEY_ENV] = before
