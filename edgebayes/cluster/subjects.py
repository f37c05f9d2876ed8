"""MQTT topics and NATS subjects of a cluster, and the partition of a device.

NATS's MQTT gateway turns topic ``a/b/c`` into subject ``a.b.c`` (and back for subscribers).
The server's mapping ``<prefix>.*.reading -> ebpart.{{partition(P,1)}}.{{wildcard(1)}}.reading``
puts a device's readings (and labels) on the partition subject of its id: partition =
FNV-1a 32-bit hash of the token modulo P (nats-server ``server/subject_transform.go``,
``getHashPartition``; Fowler, Noll and Vo, 1991), computed here the same way so a runtime knows
which partition a device of its checkpoint folder belongs to.
"""

from __future__ import annotations

from edgebayes.cluster.config import PARTITION_SUBJECT

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
    """The server's subject mappings for readings and labels under topic prefix ``prefix``."""
    src = subject(prefix)
    return {f"{src}.*.{kind}": f"{PARTITION_SUBJECT}.{{{{partition({partitions},1)}}}}.{{{{wildcard(1)}}}}.{kind}"
            for kind in KINDS}


def partition_filter(partition: int) -> str:
    """The subjects of one partition's readings and labels."""
    return f"{PARTITION_SUBJECT}.{partition}.>"


def parse_partition_subject(subj: str) -> tuple[int, str, str] | None:
    """``(partition, device, kind)`` of a partition subject, None for any other subject."""
    parts = subj.split(".")
    if len(parts) != 4 or parts[0] != PARTITION_SUBJECT or not parts[1].isdigit() or parts[3] not in KINDS:
        return None
    return int(parts[1]), parts[2], parts[3]
