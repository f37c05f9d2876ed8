"""The runtime's one override of paho-mqtt's private API (edgebayes.runtime.paho_client): it is
only trusted on the paho versions it was tested with."""

from __future__ import annotations

import inspect

import paho.mqtt.client as paho
import pytest
from paho.mqtt import __version__ as paho_version
from paho.mqtt.enums import CallbackAPIVersion

from edgebayes.runtime.paho_client import PAHO_TESTED, BufferedClient


def test_paho_version_is_one_the_override_was_tested_with():
    assert paho_version in PAHO_TESTED, (
        f"paho-mqtt {paho_version} is untested with BufferedClient's _sock_recv override: run "
        "the runtime and broker tests and bench/runtime.py, then add it to PAHO_TESTED")


def test_paho_reads_through_sock_recv_with_one_size_argument():
    assert list(inspect.signature(paho.Client._sock_recv).parameters) == ["self", "bufsize"]
    assert "_sock_recv" in inspect.getsource(paho.Client._packet_read)


def test_reads_are_served_from_one_chunk_and_the_ending_error_is_kept(monkeypatch):
    wire = [b"\x30\x05abcde\x30\x01z", ConnectionResetError("reset by peer")]
    asked = []

    def recv(self, bufsize):
        asked.append(bufsize)
        item = wire.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    monkeypatch.setattr(paho.Client, "_sock_recv", recv)
    c = BufferedClient(callback_api_version=CallbackAPIVersion.VERSION2, client_id="t")
    assert [c._sock_recv(n) for n in (1, 1, 5)] == [b"\x30", b"\x05", b"abcde"]
    assert c.n_buffered() == 3 and asked == [BufferedClient.READ_CHUNK]
    assert c._sock_recv(10) == b"\x30\x01z" and c.n_buffered() == 0
    with pytest.raises(ConnectionResetError):
        c._sock_recv(1)
    assert isinstance(c.last_error, ConnectionResetError)
