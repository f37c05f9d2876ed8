"""The MQTT runtime (``edgebayes run``): readings in, predictions and drift alerts out.

Modules, one concept each, importing one way (names -> config -> messages -> ingest ->
worker -> service): ``names`` (device ids and other topic-level names), ``config`` (the
TOML config, every table, validated), ``messages`` (``Reading``, ``Label``, the refusal
``ProtocolError``) and ``topics`` (every topic; docs/protocol.md), ``ingest`` (MQTT
messages in, readings and labels out: the edgebayes protocol's parser, the ``[[sources]]``
adapters and the assembler), ``pending`` (readings waiting for delayed labels), ``seqs``
(the seqs a device has accepted), ``device`` (one device's model set: accuracy, best-model
choice, drift signals), ``memory`` (the memory budget), ``checkpoint`` (atomic msgpack
checkpoints) and ``journal`` (the write-ahead journal), ``mqtt`` (the paho-mqtt 2.x
wrapper) and ``paho_client`` (its one override of paho's private API), ``tls`` (the
broker's TLS context, handshake failures in words), ``worker`` (the thread that owns all
model state), ``discovery`` (Home Assistant MQTT discovery),
``service`` (the pieces wired together), ``systemd`` (service notifications) and ``cli``.
"""
