"""The input side: MQTT messages in, validated ``Reading`` and ``Label`` objects (or refusals) out.

Messages of the edgebayes protocol (docs/protocol.md) are parsed as they are. The runtime also
reads what existing sensors already publish (``[[sources]]``, ``edgebayes.runtime.config``):
each entry names an ecosystem (``kind``), the topics to read, how the device id comes from
the topic, where each feature's value lives and, optionally, where the label comes from. Its
adapter turns one MQTT message into an ``Extract`` (feature values, a label value, an
availability change, or a counted rejection with its reason); the ``SourceRouter`` then drops
stale retained values and repeated publishes and feeds the ``Assembler`` (one reading per
device from values arriving on several topics). The readings and labels go to the worker's
own path: test-then-train, pending labels, drift and checkpoints are the same as for the
edgebayes protocol.

Modules: ``intake`` (``Intake``: any incoming message in, ``(item, topic)`` pairs out for
the worker), ``native`` (the edgebayes protocol's ``Parser``, and its adapter under another
prefix), ``values`` (a wire value as a feature value, a label, an availability), ``adapter``
(``Extract`` and the generic JSON adapter), one module per ecosystem (``zigbee2mqtt``,
``tasmota``, ``esphome``, ``shelly``), ``adapters`` (kind -> adapter), ``assembler`` and
``router`` (``SourceRouter``: the ``[[sources]]`` messages through adapters and assembler),
``ids`` (``DeviceIds``: which topic name holds each device id, so "Room.1" and "Room 1" never
share a model).
Nothing here imports the worker: it takes what ``Intake`` gives it.

Availability messages are never readings: ``offline`` drops the values that device published
(and Shelly's kept component status), so nothing stale is assembled from them. Each kind
subscribes to its own, derived from the topics it reads: zigbee2mqtt ``bridge/state`` and
``<name>/availability``; Tasmota ``LWT``; ESPHome ``<topic_prefix>/status``
(``online``/``offline``); Shelly Gen1 ``shellies/<id>/online`` and Gen2+ ``<prefix>/online``
(``true``/``false``); a configured ``availability_topic`` is read by every kind as well. An
ESPHome ``topic_prefix`` or a Shelly Gen2 prefix may have several levels
(``home/livingroom/esp1``): the ESPHome prefix is what comes before the component level
(``sensor``, ``binary_sensor``, ...) of ``<prefix>/<component>/<object_id>/state``, and each
prefix is one device (``home_livingroom_esp1``; ``device_level`` picks one level instead).

zigbee2mqtt republishes a device's whole cached state (``cache_state``, the default) on any
Zigbee message from it: a new measurement, but also a linkquality or battery report, another
cluster's report, or a ``last_seen`` update. So a zigbee2mqtt message whose mapped feature
values and label (a null equal to a null) are all those of the previous message from the same
publisher (the friendly name, within one ``[[sources]]`` entry) is a republish, not a
measurement: it makes no reading and does not count towards the round of ``interval_s = 0``,
whatever else in it changed (fields the config does not read). It still shows the values are
current (their age for ``max_age_s`` restarts), its label is applied as any label, and it is
counted as ``unchanged``. After that publisher's ``offline`` the same values are new again.
The other kinds publish on measurement (Tasmota's ``TelePeriod``, ESPHome's per-entity topics,
Shelly's status deltas), so an equal value there is a reading.

Each ecosystem's module names the payload shapes and topics it reads; tests/test_sources.py
holds them against real payloads of each.
"""
