"""firmware_sim: simulated sensor devices and a monitor, over MQTT, for testing edgebayes.

The devices (`Simulator`, `run_devices`) play sensor nodes publishing readings and labels in
the runtime's protocol (docs/protocol.md), from a data file or a generator, at a rate, with
seeded faults (`FaultRates`): lost, duplicated and malformed readings, reboots, bursts. The
`Monitor` subscribes to what the runtime publishes back, learns the true labels from the
readings and labels it sees, and scores the predictions. Command line: ``firmware-sim``
(`firmware_sim.cli`).
"""

from firmware_sim.device import Device, Message, Reboot, SimConfig, build_devices
from firmware_sim.faults import MALFORMED_KINDS, Fault, FaultRates, fault_plan
from firmware_sim.monitor import Monitor
from firmware_sim.mqtt import BrokerOptions, parse_address
from firmware_sim.runner import DeviceStats, SimStats, Simulator, run_devices

__all__ = [
    "MALFORMED_KINDS",
    "BrokerOptions",
    "Device",
    "DeviceStats",
    "Fault",
    "FaultRates",
    "Message",
    "Monitor",
    "Reboot",
    "SimConfig",
    "SimStats",
    "Simulator",
    "build_devices",
    "fault_plan",
    "parse_address",
    "run_devices",
]
