"""Fixtures every test folder shares.

- Every test (and every daemon or CLI it starts) signs engine checkpoints with a key of the test session, never
  the user's own ``~/.local/state/touchmove/checkpoint.key``.
- A private Mosquitto for each test that asks for one. The end-to-end tests (tests/e2e) replace it with their
  own broker, which they stop and restart on one port to make outages.
- SIGINT as Ctrl-C in the test processes even where the suite was started with it ignored (a background job of
  a non-interactive shell, ``make test &``, ignores SIGINT, and every child inherits that): the tests that stop
  a ``touchmove`` process or the lichess stand-in with SIGINT saw it ignored (``replay`` exited 0 at EOF, the
  stand-in never stopped).
- A failure's report whose text cannot be written as UTF-8 (a lone surrogate, from bytes decoded with
  ``surrogateescape``) is made writable: pytest-xdist's workers send reports through execnet, which refuses such
  text, and the worker's INTERNALERROR ended the whole run (issue 40: 80 broadcast tests never ran).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Generator, Iterator

import pytest

from touchmove.bridge.checkpoint import KEY_ENV
from touchmove.sim.local_broker import LocalBroker

REQUIRE_ALL = os.environ.get("TOUCHMOVE_REQUIRE_ALL") == "1"

#: Modules outside tests/e2e whose tests are end to end too: games played in real time through real processes
#: (``touchmove run``, ``touchmove broadcast``, emulated boards on pseudo-terminals, a wheel installed, lichess's
#: client, Chromium). Marked ``e2e`` with tests/e2e, so ``make test-quick`` (``-m "not e2e"``) leaves them to
#: ``make test``.
E2E_MODULES = frozenset({
    "tests/boards/test_e2e_boards.py", "tests/boards/test_flood_e2e.py", "tests/boards/test_dgt_dump_glitch_e2e.py",
    "tests/boards/test_board_claims_e2e.py", "tests/boards/test_journal_lost_e2e.py",
    "tests/cli/test_club_guide.py", "tests/cli/test_wheel.py", "tests/cli/test_demo_pgn.py",
    "tests/livechess/test_lichess_client.py",
    "tests/broadcast/test_broadcast_delay_process.py", "tests/broadcast/test_broadcast_revocation_process.py",
    "tests/broadcast/test_broadcast_e2e_bridge.py", "tests/broadcast/test_broadcast_losing_paths.py",
    "tests/broadcast/test_broadcast_round_identity.py", "tests/broadcast/test_broadcast_dashboard.py",
})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = config.rootpath
    for item in items:
        where = item.path.relative_to(root).as_posix() if item.path.is_relative_to(root) else ""
        if where.startswith("tests/e2e/") or where in E2E_MODULES:
            item.add_marker(pytest.mark.e2e)


def pytest_configure(config: pytest.Config) -> None:
    # each pytest process (the xdist workers too): the children a test starts inherit an ignored SIGINT, not a
    # handler, so Python's own is put back where the process began with SIGINT ignored
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


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


@pytest.fixture
def broker() -> Iterator[LocalBroker]:
    """A Mosquitto of the test's own on a free port (never the system broker on 1883)."""
    if not LocalBroker.available():
        if REQUIRE_ALL:
            pytest.fail("mosquitto is not installed (TOUCHMOVE_REQUIRE_ALL=1): run `make system-deps`")
        pytest.skip("mosquitto is not installed: `make system-deps` (apt-get install mosquitto)")
    with LocalBroker() as running:
        yield running


def utf8_writable(text: str) -> str:
    """Return ``text`` with each lone surrogate written as its escape (``\\udcff``); other text unchanged."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, None, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()  # type: ignore[attr-defined]
    if report.longrepr is not None:
        text = str(report.longrepr)
        if utf8_writable(text) != text:
            report.longrepr = utf8_writable(text)
    report.sections = [(title, utf8_writable(content)) for title, content in report.sections]
