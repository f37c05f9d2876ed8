"""The tests' own small data files (tests/data/), written by edgebayes's stream generators.

``tests/data/sensors.csv`` stands in for a real CSV where a test needs a file of numeric
readings and a label but not a particular data set: 600 rows of MOA's random RBF stream (8
features, 2 classes, seed 1), 4 decimals. Rewrite it with ``python -m tests.data_files``;
``tests/test_data_files.py`` checks the committed file is what this writes.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from edgebayes.streams import open_stream

DATA = Path(__file__).resolve().parent / "data"
SENSORS = DATA / "sensors.csv"
SENSORS_ROWS = 600


def sensors_csv() -> str:
    """The text of ``sensors.csv``: header ``f0..f7,class``, then `SENSORS_ROWS` rows."""
    stream = open_stream("synth:RBF(n_classes=2, n_features=8)", n_samples=SENSORS_ROWS, seed=1)
    X, y = stream.to_arrays()
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow([f"f{j}" for j in range(X.shape[1])] + ["class"])
    for x, label in zip(X.tolist(), y):
        w.writerow([f"{v:.4f}" for v in x] + [label])
    return out.getvalue()


if __name__ == "__main__":
    SENSORS.write_text(sensors_csv())
