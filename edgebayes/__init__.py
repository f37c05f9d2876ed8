"""edgebayes: online learning on a sensor stream, on a small device, inside a memory budget.

The learners (`edgebayes.naive_bayes`, `edgebayes.tree`, `edgebayes.ensemble`) share one API,
described in `edgebayes.base`; the drift detectors live in `edgebayes.drift`, the streams in
`edgebayes.streams`, prequential evaluation in `edgebayes.evaluate`, and the MQTT runtime in
`edgebayes.runtime`. Submodules are imported on demand so that `import edgebayes` stays cheap
on a Raspberry Pi.
"""

__version__ = "0.1.0"
