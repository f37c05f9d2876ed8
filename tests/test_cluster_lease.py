"""A lease that expires while ``Leases.acquire`` runs: nats-py's ``KeyValue.create`` reads the
key after the server refused the create (it existed) and raises ``KeyNotFoundError`` when it
expired in between. ``acquire`` answers "not taken" (the next lease round takes it), as it does
for a key another runtime holds, instead of failing the lease round."""

from __future__ import annotations

import asyncio

from tests.nats_cluster import nats_server_exe


class _ExpiringKV:
    """A bucket whose key is refused to ``create``, then gone when nats-py reads it (its
    ``create`` then raises ``KeyNotFoundError``: nats/js/kv.py)."""

    def __init__(self, error):
        self.error = error
        self.calls = []

    async def create(self, key, value):
        self.calls.append(key)
        raise self.error


def test_acquire_of_a_lease_expiring_meanwhile_is_not_taken_not_an_error():
    nats_server_exe()
    from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError

    from edgebayes.cluster.lease import Leases

    for error in (KeyNotFoundError(), KeyWrongLastSequenceError()):
        kv = _ExpiringKV(error)
        leases = Leases(kv, "rt-b")
        assert asyncio.run(leases.acquire(3)) is False
        assert kv.calls == ["partition.3"] and leases.held == {}
