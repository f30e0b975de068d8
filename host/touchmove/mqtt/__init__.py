"""The MQTT side shared by the bridge (:mod:`touchmove.bridge`), the broadcaster (:mod:`touchmove.broadcast`),
the LiveChess API and the tools; it imports none of them.

| module | what |
|---|---|
| :mod:`~touchmove.mqtt.wire` | the wire contract: the topic tree, every payload's shape and its check |
| :mod:`~touchmove.mqtt.events` | the engine's events as their readers check them, built from the event classes |
| :mod:`~touchmove.mqtt.schema` | the incoming commands' checks (re-exported by :mod:`~touchmove.mqtt.wire`) |
| :mod:`~touchmove.mqtt.brokers` | broker URL lists, credentials and TLS, the endpoints a service connects to |
| :mod:`~touchmove.mqtt.connection` | one broker connection: connect timeouts, subscriptions asked again |
| :mod:`~touchmove.mqtt.link` | :class:`MqttLink`: a connection to one broker kept up, the one link class |
| :mod:`~touchmove.mqtt.auth` | ``touchmove broker-auth``: per-service broker users and access rules |
"""
