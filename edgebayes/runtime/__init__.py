"""The MQTT runtime (``edgebayes run``): readings in, predictions and drift alerts out.

Modules, one concept each: ``config`` (the TOML config, validated), ``protocol`` (topics and
payload validation; docs/protocol.md), ``pending`` (readings waiting for delayed labels),
``device`` (one device's model set: accuracy, best-model choice, drift signals),
``checkpoint`` (atomic msgpack checkpoints), ``mqtt`` (the paho-mqtt 2.x wrapper), ``tls``
(the broker's TLS context, handshake failures in words), ``worker``
(the thread that owns all model state), ``service`` (the pieces wired together) and ``cli``.
"""
