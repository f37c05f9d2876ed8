"""MQTT topics and NATS subjects of a cluster, and the partition of a device.

NATS's MQTT gateway turns topic ``a/b/c`` into subject ``a.b.c`` (and back for subscribers).
The server's mapping ``<prefix>.*.reading -> ebin.{{partition(P,1)}}.{{wildcard(1)}}.reading``
puts a device's readings (and labels) on the partition subject of its id: partition =
FNV-1a 32-bit hash of the token modulo P (nats-server ``server/subject_transform.go``,
``getHashPartition``; Fowler, Noll and Vo, 1991), computed here the same way so a runtime knows
which partition a device of its checkpoint folder belongs to.

The gateway handles a QoS 1 publish in two steps (nats-server ``server/mqtt.go``,
``mqttInitiateMsgDelivery``): a plain publish on the mapped subject, which no stream keeps
(a stream whose leader is being replaced drops it unanswered), then a JetStream store request
on ``$MQTT.msgs.<mapped subject>``, whose pub-ack it waits for before its PUBACK (no pub-ack
within ``mqtt { js_api_timeout }``: the connection is closed and the device resends). The
account's mappings apply to that request too, so ``$MQTT.msgs.ebin.*.*.<kind> ->
ebpart.{{wildcard(1)}}.{{wildcard(2)}}.<kind>`` makes the partition stream (``ebpart.>``) the
store that acknowledges it: a PUBACK means the stream's replicas hold the message. A QoS 0
publish has no store request: it reaches no stream.
"""

from __future__ import annotations

from edgebayes.cluster.config import GATEWAY_SUBJECT, MQTT_STORE_PREFIX, PARTITION_SUBJECT

KINDS = ("reading", "label")
_FNV_OFFSET, _FNV_PRIME = 0x811C9DC5, 0x01000193


def partition_of(device: str, partitions: int) -> int:
    """The partition (0..``partitions``-1) NATS's ``{{partition(P,1)}}`` gives token ``device``."""
    h = _FNV_OFFSET
    for byte in device.encode():
        h = ((h ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return h % partitions


def subject(topic: str) -> str:
    """The NATS subject of MQTT topic ``topic`` (levels joined by dots)."""
    return topic.replace("/", ".")


def mappings(prefix: str, partitions: int) -> dict[str, str]:
    """The server's subject mappings for readings and labels under topic prefix ``prefix``: the
    device's topic to its partition's gateway subject, and the gateway's store request of that
    subject to the partition stream's subject (see the module docstring)."""
    src = subject(prefix)
    out = {}
    for kind in KINDS:
        out[f"{src}.*.{kind}"] = f"{GATEWAY_SUBJECT}.{{{{partition({partitions},1)}}}}.{{{{wildcard(1)}}}}.{kind}"
        out[f"{MQTT_STORE_PREFIX}.{GATEWAY_SUBJECT}.*.*.{kind}"] = \
            f"{PARTITION_SUBJECT}.{{{{wildcard(1)}}}}.{{{{wildcard(2)}}}}.{kind}"
    return out


def partition_filter(partition: int) -> str:
    """The subjects of one partition's readings and labels."""
    return f"{PARTITION_SUBJECT}.{partition}.>"


def parse_partition_subject(subj: str) -> tuple[int, str, str] | None:
    """``(partition, device, kind)`` of a partition subject, None for any other subject."""
    parts = subj.split(".")
    if len(parts) != 4 or parts[0] != PARTITION_SUBJECT or not parts[1].isdigit() or parts[3] not in KINDS:
        return None
    return int(parts[1]), parts[2], parts[3]
