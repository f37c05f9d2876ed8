"""The free loopback ports the fixtures start brokers and NATS nodes on."""

from tests.broker import free_ports


def test_ports_chosen_together_are_distinct():
    # chosen one at a time, a port just released can come back: a NATS node then fails to bind
    for _ in range(500):
        ports = free_ports(12)
        assert len(set(ports)) == 12
        assert all(1024 <= p <= 65535 for p in ports)
