"""The one place the runtime reaches into paho-mqtt's private API: ``BufferedClient``.

paho 2.x reads every packet through ``Client._sock_recv`` (a private method): one ``recv``
for the command byte, one per length byte and one for the body. ``BufferedClient`` overrides
it to (1) keep the ``OSError`` that ended a connection (``last_error``: paho itself reports
only "Unspecified error", and ``edgebayes.runtime.mqtt`` turns the error into the line that
says why a connect failed, e.g. the broker's TLS alert "certificate required"), and (2)
read the socket in chunks. The chunked reads gain little, within the run-to-run spread of
``bench/runtime.py`` (docs/results.md, "Figures behind choices in the code"); the override
stays for (1).

``PAHO_TESTED`` lists the paho versions this override was tested with;
tests/test_paho_client.py fails on any other, so a new paho is checked (the runtime and
broker tests, then ``bench/runtime.py``) before it is added there.
"""

from __future__ import annotations

import paho.mqtt.client as paho

#: paho-mqtt versions ``BufferedClient`` was tested with (``paho.mqtt.__version__``)
PAHO_TESTED = ("2.2.0",)


class BufferedClient(paho.Client):
    """paho's client, reading the socket in chunks of up to ``READ_CHUNK`` bytes.

    paho reads a packet with one ``recv`` for the command byte, one per length byte and one for
    the body: three system calls for a reading, each releasing and retaking the GIL. Here they
    are served from one chunk; ``n_buffered`` tells the network loop what is left in it (select
    cannot see it). Overrides paho 2.x's ``_sock_recv``, which every read goes through, and
    keeps the error that ended a connection in ``last_error`` (paho reports "Unspecified
    error" for it).
    """

    READ_CHUNK = 65536

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._chunk = b""
        self._pos = 0
        self.last_error: OSError | None = None

    def reconnect(self):
        self._chunk, self._pos = b"", 0  # nothing of the old connection is read on the new one
        self.last_error = None
        return super().reconnect()

    def n_buffered(self) -> int:
        """Bytes read from the socket and not yet taken by paho."""
        return len(self._chunk) - self._pos

    def _sock_recv(self, bufsize: int) -> bytes:
        if self._pos >= len(self._chunk):
            try:
                self._chunk, self._pos = super()._sock_recv(self.READ_CHUNK), 0  # b"": closed
            except BlockingIOError:
                raise
            except OSError as exc:  # e.g. the broker's TLS alert "certificate required"
                self.last_error = exc
                raise
        data = self._chunk[self._pos:self._pos + bufsize]
        self._pos += len(data)
        return data
