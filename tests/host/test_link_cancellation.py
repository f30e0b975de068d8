"""A bridge or broadcaster asked to stop stops, even when the cancellation reaches its MQTT link while a connection
attempt fails: a client library that turns the cancellation into its own error, or Python 3.11's ``TaskGroup``
beside a failing child, must not make the reconnect loop try again for ever (a stop that never ends, a test run
that hangs in ``asyncio.run``). Each attempt runs through ``one_attempt``, which raises the caller's cancellation
whatever the attempt made of it."""

from __future__ import annotations

import asyncio
import io
import logging
from typing import Any

import aiomqtt
import pytest

from touchmove.bridge import mqtt_link
from touchmove.bridge.mqtt_link import BridgeLink
from touchmove.broadcast import consumer
from touchmove.broadcast.tournament import BrokerConfig
from touchmove.config import MqttConfig
from touchmove.mqtt.connection import AIOMQTT_LOGGER, one_attempt, tame_late_acknowledgements


class SwallowingClient:
    """A client whose connection attempt takes a while and, cancelled meanwhile, raises its own error."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.attempts = 0

    async def __aenter__(self) -> SwallowingClient:
        try:
            await asyncio.sleep(0.3)
        except asyncio.CancelledError:
            raise aiomqtt.MqttError("connection lost while connecting") from None
        raise aiomqtt.MqttError("refused")

    async def __aexit__(self, *exc: object) -> None:
        return None


async def _nothing(topic: str, raw: bytes, retained: bool) -> None:
    return None


async def _stops(run: Any) -> bool:
    task = asyncio.create_task(run)
    await asyncio.sleep(0.1)         # inside the first connection attempt
    task.cancel()
    done, _ = await asyncio.wait([task], timeout=2)
    return bool(done)


def stops(run: Any) -> bool:
    """Whether ``run`` ends once cancelled; its loop is closed either way, never waiting for a task that goes on
    (``asyncio.run`` would wait for ever)."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(_stops(run))
    finally:
        loop.close()


def test_the_bridges_link_stops_when_cancelled_during_a_failing_connect(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mqtt_link.aiomqtt, "Client", SwallowingClient)
    link = BridgeLink(MqttConfig(port=1), on_command=_nothing, backoff_max=0.01)
    assert stops(link.run()), "the link went on reconnecting after it was cancelled"


def test_the_broadcasters_link_stops_when_cancelled_during_a_failing_connect(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mqtt_link.aiomqtt, "Client", SwallowingClient)
    monkeypatch.setattr(consumer, "BACKOFF_START", 0.01)
    feeds = consumer.BridgeFeeds(hub=None, brokers=[BrokerConfig(port=1)])  # type: ignore[arg-type]
    assert stops(feeds.run()), "the link went on reconnecting after it was cancelled"


def test_an_attempt_returns_and_raises_what_it_does_and_a_cancellation_wins_over_its_error() -> None:
    async def main() -> list[str]:
        seen: list[str] = []

        async def answers() -> int:
            return 7

        async def refused() -> None:
            raise aiomqtt.MqttError("refused")

        async def swallows() -> None:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                seen.append("the attempt turned the cancellation into an error")
                raise aiomqtt.MqttError("disconnected") from None

        assert await one_attempt(answers()) == 7
        with pytest.raises(aiomqtt.MqttError, match="refused"):
            await one_attempt(refused())

        async def loop() -> None:
            while True:                       # a reconnect loop: an MqttError means "try again"
                try:
                    await one_attempt(swallows())
                except aiomqtt.MqttError:
                    seen.append("tried again")

        task = asyncio.create_task(loop())
        await asyncio.sleep(0.01)
        task.cancel()
        done, _ = await asyncio.wait([task], timeout=2)
        assert done and task.cancelled()
        return seen

    assert asyncio.run(main()) == ["the attempt turned the cancellation into an error"]


def test_a_taskgroup_child_failing_as_the_cancellation_comes_does_not_keep_the_loop_going() -> None:
    """Python 3.11's TaskGroup raises its children's errors instead of a cancellation that came meanwhile."""
    async def main() -> int:
        rounds = 0

        async def fails_when_cancelled() -> None:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                raise aiomqtt.MqttError("connection lost") from None

        async def session() -> None:
            async with asyncio.TaskGroup() as group:
                group.create_task(fails_when_cancelled())

        async def loop() -> None:
            nonlocal rounds
            while True:
                rounds += 1
                try:
                    await one_attempt(session())
                except* aiomqtt.MqttError:
                    pass

        task = asyncio.create_task(loop())
        await asyncio.sleep(0.01)
        task.cancel()
        done, _ = await asyncio.wait([task], timeout=2)
        assert done and task.cancelled()
        return rounds

    assert asyncio.run(main()) == 1


def test_a_late_suback_is_one_warning_line_not_a_traceback() -> None:
    """aiomqtt logs a SUBACK whose subscribe gave up already (timed out, or cancelled by Ctrl-C) with a
    traceback; the bridge and the broadcaster install a filter that makes it one warning line (the CI run of
    2026-12-04 evening: `touchmove run` stopped by Ctrl-C printed that traceback under load)."""
    tame_late_acknowledgements()
    tame_late_acknowledgements()   # once only
    logger = logging.getLogger(AIOMQTT_LOGGER)
    assert len([f for f in logger.filters if type(f).__name__ == "LateAcknowledgement"]) == 1
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger.addHandler(handler)
    try:
        try:
            {}.pop(4)
        except KeyError:
            logger.exception('Unexpected message ID "%d" in on_subscribe callback', 4)
        try:
            {}.pop(5)
        except KeyError:
            logger.exception("something else")
    finally:
        logger.removeHandler(handler)
    text = stream.getvalue()
    assert text.splitlines()[0] == ('WARNING Unexpected message ID "4" in on_subscribe callback '
                                    "(an answer after its request gave up: ignored)")
    assert "Traceback" not in text.split("something else", 1)[0]
    assert "Traceback" in text.split("something else", 1)[1]   # other errors keep their traceback
