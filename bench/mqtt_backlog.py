"""What one queued outgoing message costs in memory: paho's objects besides topic and payload.

``MqttClient`` counts each message of its outgoing backlog as topic + payload +
``edgebayes.runtime.backlog.PAHO_MESSAGE_BYTES``; this measures topic + the last term with
tracemalloc: ``--n`` QoS 1 messages published on a paho 2.x client that is not connected
(they stay in its queue, as during a broker outage).

    python -m bench.mqtt_backlog [--n 5000] [--payload 150]
"""

from __future__ import annotations

import argparse
import tracemalloc

import paho.mqtt.client as paho
from paho.mqtt import __version__ as PAHO_VERSION
from paho.mqtt.enums import CallbackAPIVersion

from edgebayes.runtime.backlog import PAHO_MESSAGE_BYTES

TOPIC = "edgebayes/sim-0/prediction"


def per_message_bytes(n: int, payload_bytes: int) -> float:
    """Bytes tracemalloc sees allocated per QoS 1 publish, minus its payload."""
    c = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="bench")
    c.on_socket_register_write = lambda client, userdata, sock: None
    payloads = [bytes(payload_bytes - 4) + i.to_bytes(4, "big") for i in range(n)]
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for p in payloads:
        c.publish(TOPIC, p, qos=1)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    return grown / n  # the payloads were allocated before the first snapshot


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000, help="messages published (default 5000)")
    ap.add_argument("--payload", type=int, default=150, help="payload bytes (default 150)")
    args = ap.parse_args()
    b = per_message_bytes(args.n, args.payload)
    print(f"paho {PAHO_VERSION}: {b:.0f} bytes per queued QoS 1 message besides its "
          f"payload (topic {len(TOPIC)} bytes); PAHO_MESSAGE_BYTES = {PAHO_MESSAGE_BYTES}")


if __name__ == "__main__":
    main()
