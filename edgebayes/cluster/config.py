"""Names the NATS side of a pool shares: the partition subject and the JetStream names.

The ``[cluster]`` table itself is `edgebayes.runtime.config.ClusterConfig` (docs/config.md).
"""

from __future__ import annotations

from edgebayes.runtime.config import ClusterConfig

#: the subject the stream keeps readings and labels on: <subject>.<P>.<device>.<kind>
PARTITION_SUBJECT = "ebpart"
#: the subject the MQTT gateway delivers a device's publish on (<subject>.<P>.<device>.<kind>), kept by no stream
GATEWAY_SUBJECT = "ebin"
#: where NATS's MQTT gateway stores a QoS 1/2 publish before its PUBACK: <prefix>.<delivered subject>
MQTT_STORE_PREFIX = "$MQTT.msgs"
#: JetStream names: the stream of partition subjects, the lease bucket, the checkpoint store
STREAM, LEASES, CHECKPOINTS = "EDGEBAYES_PARTITIONS", "edgebayes_leases", "edgebayes_checkpoints"
#: the key-value bucket naming each partition's current checkpoint object (its head)
HEADS = "edgebayes_checkpoint_heads"

__all__ = ["CHECKPOINTS", "GATEWAY_SUBJECT", "HEADS", "LEASES", "MQTT_STORE_PREFIX", "PARTITION_SUBJECT", "STREAM",
           "ClusterConfig"]
