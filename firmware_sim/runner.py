"""Play the scripts of N simulated devices against a broker, on time.

One MQTT connection per device, as real devices have: a reboot then drops only that device's
connection, the broker sees one client per device (client ids, credentials, sessions), and a
device's messages keep their order. One scheduler thread plays every device's script (paho
runs a network thread per connection): a heap ordered by due time, each due time an offset
from one monotonic start, so a slow publish delays the next message but never shifts the
schedule (no drift). When the publisher falls behind it publishes at once and catches up;
``max_lag_s`` in the stats says by how much it was late.

A reboot first waits (at most ``flush_timeout_s``) until the device's earlier publishes are
confirmed, then disconnects cleanly; delayed labels it had not yet sent are lost with its
memory (counted in ``labels_dropped``). Labels of lost or malformed readings are still sent:
the label source does not know what happened to the reading.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from dataclasses import asdict, dataclass, field

from firmware_sim.device import Device, Message, Reboot, SimConfig, build_devices
from firmware_sim.faults import MALFORMED_KINDS
from firmware_sim.mqtt import BrokerOptions, Connection, as_options

log = logging.getLogger(__name__)

# heap priorities for events due at the same instant: labels of the old boot before a reboot,
# the reconnection before the first reading of the new boot
_LABEL, _REBOOT, _RECONNECT, _READING = 0, 1, 2, 3


@dataclass
class DeviceStats:
    """What one device did (counts of messages and samples).

    ``samples`` counts every sample taken (lost ones included); ``readings_published`` counts
    the reading messages handed to MQTT (a duplicated reading twice, a lost one never).
    ``labels_inline`` counts the labels sent inside a reading (the edgebayes format, or a
    Tasmota switch, once per sample not lost); ``labels_published`` the label messages handed to MQTT: delayed labels,
    and with another format the label message sent beside each labelled reading.
    ``refused`` counts the publishes (readings and labels) the broker acknowledged with a
    failure reason code, e.g. 135 Not authorized by its ACL: handed to MQTT, yet lost;
    ``refused_reasons`` says why (reason -> count). ``unconfirmed`` counts the QoS 1 and 2
    publishes the broker had not acknowledged when the run ended (``flush_timeout_s`` after
    its last publish, reconnecting meanwhile): handed to MQTT, not known to be taken.
    """

    samples: int = 0
    readings_published: int = 0
    lost: int = 0
    duplicated: int = 0
    malformed: dict = field(default_factory=lambda: dict.fromkeys(MALFORMED_KINDS, 0))
    labels_inline: int = 0
    labels_published: int = 0
    labels_dropped: int = 0
    reboots: int = 0
    bursts: int = 0
    publish_failed: int = 0
    refused: int = 0
    refused_reasons: dict = field(default_factory=dict)
    unconfirmed: int = 0


@dataclass
class SimStats:
    """The outcome of a run: per-device `DeviceStats`, their sums, timing."""

    devices: dict[str, DeviceStats]
    elapsed_s: float = 0.0
    max_lag_s: float = 0.0
    completed: bool = False  # False when stopped early

    def totals(self) -> dict:
        out = asdict(DeviceStats())
        for s in self.devices.values():
            for k, v in asdict(s).items():
                if isinstance(v, dict):
                    for kk, vv in v.items():
                        out[k][kk] = out[k].get(kk, 0) + vv
                else:
                    out[k] += v
        return out

    def as_dict(self) -> dict:
        """JSON-ready: ``elapsed_s``, ``max_lag_s``, ``completed``, ``totals``, ``devices``."""
        return {
            "elapsed_s": self.elapsed_s,
            "max_lag_s": self.max_lag_s,
            "completed": self.completed,
            "totals": self.totals(),
            "devices": {d: asdict(s) for d, s in self.devices.items()},
        }


@dataclass
class Sent:
    """A message handed to MQTT (kept when the simulator records): the script entry, the
    bytes, the ``ts`` they carry and the monotonic time of the publish call."""

    message: Message
    payload: bytes
    ts: float
    t_sent: float
    publications: list | None = None  # every (topic, payload) sent; several in some formats


class Simulator:
    """N devices publishing to a broker, from one thread.

    Args:
        config: the `SimConfig`.
        broker: `BrokerOptions` or ``"HOST:PORT"``.
        qos: QoS of readings and labels (1 recommended by docs/protocol.md).
        client_id: client id template; ``{device}`` is replaced by the device id. It must
            contain ``{device}`` when there is more than one device (one client id per
            connection, or the broker would throw them out in turn).
        record: keep every published message in ``sent`` (for tests; memory grows with the run).
        flush_timeout_s: how long a reboot or the end of the run waits for confirmations.

    Use ``run()`` (blocks until the end), or ``start()`` / ``stop()`` / ``join()``.

    Raises:
        ValueError: a bad client id template (and from `build_devices`).
    """

    def __init__(
        self,
        config: SimConfig,
        broker: BrokerOptions | str,
        *,
        qos: int = 1,
        client_id: str = "firmware-sim-{device}",
        record: bool = False,
        flush_timeout_s: float = 10.0,
    ):
        if qos not in (0, 1, 2):
            raise ValueError(f"qos must be 0, 1 or 2, got {qos!r}")
        if config.n_devices > 1 and "{device}" not in client_id:
            raise ValueError(
                f"client id {client_id!r} must contain '{{device}}' for {config.n_devices} devices"
            )
        self.config = config
        self.broker = as_options(broker)
        self.qos = qos
        self.flush_timeout_s = flush_timeout_s
        self.devices: list[Device] = build_devices(config)
        self.connections = [
            Connection(self.broker, client_id.replace("{device}", d.device_id))
            for d in self.devices
        ]
        self.stats = SimStats({d.device_id: DeviceStats() for d in self.devices})
        self.sent: list[Sent] | None = [] if record else None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    def run(self) -> SimStats:
        """Connect every device, play all scripts, flush, disconnect; the stats."""
        self.start()
        return self.join()

    def start(self) -> Simulator:
        """Connect every device, then play the scripts in a background thread.

        Raises:
            ConnectionError, OSError: a device cannot connect (the others are disconnected).
        """
        try:
            for conn in self.connections:
                conn.connect()
        except BaseException:
            self._disconnect_all()
            raise
        self._thread = threading.Thread(target=self._main, name="firmware-sim", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop early (what is due is not sent); ``join()`` then returns."""
        self._stop.set()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def join(self, timeout_s: float | None = None) -> SimStats:
        """Wait for the end of the run; the stats. Re-raises an error of the scheduler thread."""
        if self._thread is not None:
            self._thread.join(timeout_s)
        if self._error is not None:
            raise self._error
        return self.stats

    def _main(self) -> None:
        self._start = time.monotonic()
        try:
            self._play()
        except BaseException as exc:  # surfaced by join() (docs/cases.md C31: never silent)
            log.exception("firmware-sim scheduler failed")
            self._error = exc
        finally:
            for conn in self.connections:  # one reconnecting (paho keeps trying) resends what it has
                if not conn.flush(self.flush_timeout_s):
                    log.warning("%s: publishes still unconfirmed at the end", conn.client_id)
            self._disconnect_all()
            for device, conn in zip(self.devices, self.connections):
                s = self.stats.devices[device.device_id]
                s.refused, s.refused_reasons = sum(conn.refused_publishes.values()), dict(conn.refused_publishes)
                s.unconfirmed = conn.unconfirmed
            self.stats.elapsed_s = time.monotonic() - self._start

    def _disconnect_all(self) -> None:
        for conn in self.connections:
            conn.disconnect()

    # -- the schedule --------------------------------------------------------------------------

    def _play(self) -> None:
        heap: list = []
        counter = 0  # ties broken in push order
        scripts = [d.events() for d in self.devices]
        boots = [0] * len(self.devices)
        reboot_s: list[list[float]] = [[] for _ in self.devices]  # planned time of each reboot

        delay = self.config.label_delay_s
        stop = self._stop

        def pull(i: int) -> None:
            """Push device i's next events, up to and including its next reading or reboot.

            Called right after the device's previous reading went out, so a label (which
            follows its reading in the script) is kept at least ``label_delay_s`` after the
            real publish of its reading even when the publisher runs late.
            """
            nonlocal counter
            for event in scripts[i]:
                due = event.send_s
                if isinstance(event, Reboot):
                    prio = _REBOOT
                elif event.kind == "label":
                    prio = _LABEL
                    due = max(due, time.monotonic() - start + delay)
                else:
                    prio = _READING
                heapq.heappush(heap, (due, prio, counter, i, event))
                counter += 1
                if prio != _LABEL:
                    return

        for i in range(len(self.devices)):
            pull(i)  # opens the streams: before the clock starts
        start = self._start = time.monotonic()
        wall = time.time()
        while heap:
            due, prio, _, i, event = heap[0]
            wait = start + due - time.monotonic()
            if wait > 0:
                if stop.wait(wait):
                    return
                continue
            if stop.is_set():
                return
            heapq.heappop(heap)
            self.stats.max_lag_s = max(self.stats.max_lag_s, -wait)
            if prio == _READING:
                self._reading(i, event, wall)
                pull(i)
            elif prio == _LABEL:
                # lost with the device's memory if a reboot was planned before it: decided on
                # the script's times, so the outcome does not depend on the publisher's lag
                if event.boot < boots[i] and reboot_s[i][event.boot] < event.send_s:
                    self.stats.devices[event.device].labels_dropped += 1
                else:
                    self._publish(i, event, wall)
            elif prio == _REBOOT:
                boots[i] = event.boot
                reboot_s[i].append(event.send_s)
                self._reboot(i, event)
                heapq.heappush(heap, (due + event.down_s, _RECONNECT, counter, i, event))
                counter += 1
            else:
                self.connections[i].connect(self.flush_timeout_s, retry=True)
                pull(i)
        self.stats.completed = True

    def _reading(self, i: int, m: Message, wall: float) -> None:
        s = self.stats.devices[m.device]
        s.samples += 1
        s.bursts += m.burst_start
        if m.delivery == "lost":
            s.lost += 1
            return
        if m.labelled and self.config.labels == "inline" and self.config.label_in_reading:
            s.labels_inline += 1
        if m.delivery == "malformed":
            s.malformed[m.malformed] += 1
        payload = self._publish(i, m, wall)
        if m.delivery == "duplicated":
            s.duplicated += 1
            self._publish(i, m, wall, payload)

    def _publish(self, i: int, m: Message, wall: float, pubs: list | None = None) -> list:
        ts = wall + m.sample_s
        if pubs is None:
            pubs = self.devices[i].publications(m, ts)
        s = self.stats.devices[m.device]
        sent = [self.connections[i].publish(topic, payload, self.qos) for topic, payload in pubs]
        if not all(sent):
            s.publish_failed += 1
        elif m.kind == "reading":
            s.readings_published += 1
            if m.labelled and self.config.labels == "inline" and not self.config.label_in_reading:
                s.labels_published += 1  # other formats: the label goes in a message of its own
        else:
            s.labels_published += 1
        if self.sent is not None:
            self.sent.append(Sent(m, pubs[-1][1], ts, time.monotonic(), pubs))
        return pubs

    def _reboot(self, i: int, r: Reboot) -> None:
        conn = self.connections[i]
        self.stats.devices[r.device].reboots += 1
        if not conn.flush(self.flush_timeout_s):
            log.warning("%s: rebooting with unconfirmed publishes", conn.client_id)
        conn.disconnect()


def run_devices(broker: BrokerOptions | str, source: str, **options) -> SimStats:
    """Simulate devices until the end of their scripts; the stats.

    ``options`` are `SimConfig` fields (``n_devices``, ``rate_hz``, ``limit``, ``labels``,
    ``faults``, ...) and `Simulator` keywords (``qos``, ``client_id``, ``record``).

    Example::

        stats = run_devices("127.0.0.1:1883", "synth:AGR_A", n_devices=4, rate_hz=50, limit=500)
    """
    sim_keys = {"qos", "client_id", "record", "flush_timeout_s"}
    sim_options = {k: options.pop(k) for k in list(options) if k in sim_keys}
    return Simulator(SimConfig(source, **options), broker, **sim_options).run()
