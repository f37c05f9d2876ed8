"""Names the NATS side of a pool shares: the partition subject and the JetStream names.

The ``[cluster]`` table itself is `edgebayes.runtime.config.ClusterConfig` (docs/config.md).
"""

from __future__ import annotations

from edgebayes.runtime.config import ClusterConfig

#: the subject the server's mapping puts readings and labels on: <subject>.<P>.<device>.<kind>
PARTITION_SUBJECT = "ebpart"
#: JetStream names: the stream of partition subjects, the lease bucket, the checkpoint store
STREAM, LEASES, CHECKPOINTS = "EDGEBAYES_PARTITIONS", "edgebayes_leases", "edgebayes_checkpoints"

__all__ = ["CHECKPOINTS", "LEASES", "PARTITION_SUBJECT", "STREAM", "ClusterConfig"]
