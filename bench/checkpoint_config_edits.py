"""What a restart after an edited config or an unreadable checkpoint keeps of a device's learning.

For each case a Mosquitto (``tests/broker.py``) and ``edgebayes run`` processes: device d1
publishes 30 labelled readings (seq 0..29, GaussianNB ``nb``), the runtime is stopped (SIGTERM:
it checkpoints), the case edits the config or the files, the runtime starts again and d1
publishes seq 30. Printed per case, one JSON line: how the restarted runtime took d1 (its
"admitted" log line: restored with its last seq, or new), whether the prediction of seq 30 is
the one of the model learned from seq 0..29, the error kinds d1 got (each from that run only),
what the checkpoint holds
after the run (readings learned per model) and the files in the checkpoint folder.

Cases: ``reorder`` (``[schema] features`` reordered), ``add_feature`` (a fourth feature),
``rename`` (``nb`` renamed ``bayes`` with ``previous_name = "nb"``), ``rename_then_revert`` (renamed
without ``previous_name``, then the old config again), ``labels_as_text`` (int labels, then the
same labels as JSON strings), ``permission`` (the checkpoint files mode 000 and the runtime run
as root without CAP_DAC_OVERRIDE: a real EACCES; then the mode restored and a normal restart).

    python bench/checkpoint_config_edits.py
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from edgebayes.naive_bayes import GaussianNB
from edgebayes.runtime.checkpoint import CheckpointStore
from tests.broker import Broker
from tests.runtime_client import FEATURES, Device, blobs, wait_for, write_config

NO_DAC = ("setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--")
ADMITTED = re.compile(r"device d1 admitted, (restored from its checkpoint \(last seq \d+\)|new)")


class Case:
    """One runtime's folder, config, log and test device."""

    def __init__(self, broker: Broker, name: str):
        self.dir = Path(tempfile.mkdtemp())
        self.ck = self.dir / "ck"
        self.cfg = write_config(self.dir / "rt.toml", broker, client_id=f"rt-{name}", prefix=name,
                                checkpoint_dir=self.ck, extra="[output]\nerror_interval_s = 0\n")
        self.log = self.dir / "rt.log"
        self.dev = Device(broker, prefix=name, client_id=f"dev-{name}")
        self.n_starts = 0
        self.exit_code: int | None = None
        self.marks = (0, 0)  # log bytes and error reports before the last start

    def serve(self, readings, prefix=()) -> None:
        """Start the runtime, publish ``readings`` ((seq, x, y)), wait for each one's prediction
        or an error report (at most 5 s each), stop it with SIGTERM."""
        self.marks = (self.log.stat().st_size if self.log.exists() else 0, len(self.dev.got("error")))
        proc = subprocess.Popen([*prefix, sys.executable, "-m", "edgebayes", "run", "--config", str(self.cfg),
                                 "--log-level", "INFO"], cwd=ROOT, stdout=self.log.open("ab"),
                                stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: proc.poll() is not None or sum(
                1 for t, p, _ in list(self.dev.raw) if t.endswith("/status") and p == b"online") > self.n_starts,
                15, "the runtime online")
            if proc.poll() is not None:
                self.exit_code = proc.returncode  # refused its config
                return
            self.n_starts += 1
            for seq, x, y in readings:
                n_errors = len(self.dev.got("error"))
                self.dev.publish("d1", "reading", {"seq": seq, "x": x, "y": y})
                wait_for(lambda s=seq, n=n_errors: s in self.dev.predictions() or len(self.dev.got("error")) > n,
                         5, f"seq {seq} served or refused")
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(15)

    def set_features(self, features) -> None:
        lines = self.cfg.read_text().splitlines()
        self.cfg.write_text("\n".join(f"features = {json.dumps(list(features))}" if line.startswith("features = ")
                                      else line for line in lines) + "\n")

    def set_models(self, models: str) -> None:
        text = self.cfg.read_text()
        self.cfg.write_text(text[:text.index("[[models]]")] + models)
        self.exit_code = None

    def learned(self) -> dict | str:
        try:
            state = CheckpointStore(self.ck, FEATURES).read("d1")
        except (OSError, ValueError) as exc:
            return f"unreadable: {exc}"
        return {m["name"]: m["learner"]["n"] for m in state["models"]}

    def outcome(self, seq: int, model: GaussianNB, x) -> dict:
        pred = self.dev.predictions().get(seq)
        want = {str(c): p for c, p in model.predict_proba_one(x).items()}
        text = self.log.read_bytes()[self.marks[0]:].decode()
        return {"admitted": (ADMITTED.findall(text) or [None])[-1], "exit_code": self.exit_code,
                "prediction_kept": pred is not None and set(pred["proba"]) == set(want)
                and all(abs(pred["proba"][c] - p) < 1e-12 for c, p in want.items()),
                "errors": [e["kind"] for e in self.dev.got("error")[self.marks[1]:]], "learned": self.learned(),
                "files": sorted(re.sub(r"-\d+$", "-<t>", f.name) for f in self.ck.iterdir())}


def run_case(broker: Broker, name: str, edit, x_of=lambda x: x, label=lambda y: y, label_after=None,
             prefix=(), repair=None) -> dict:
    c = Case(broker, name)
    data = blobs(32, seed=9)
    model = GaussianNB()
    for x, y in data[:30]:
        model.learn_one(x, label(y))
    c.serve([(i, x, label(y)) for i, (x, y) in enumerate(data[:30])])
    edit(c)
    x, y = data[30]
    c.serve([(30, x_of(x), (label_after or label)(y))], prefix)
    out = {"case": name, "last_seq_before": 29, **c.outcome(30, model, x)}
    if repair is not None:
        repair(c)
        x, y = data[31]
        c.serve([(31, x, label(y))])
        out["after_repair"] = c.outcome(31, model, x)
    c.dev.close()
    return out


def _chmod(c: Case, mode: int) -> None:
    for f in c.ck.glob("d1.ckpt*"):
        f.chmod(mode)


def main() -> None:
    broker = Broker(Path(tempfile.mkdtemp()) / "broker").start()
    order = (2, 0, 1)
    nb = '[[models]]\nname = "nb"\nkind = "gaussian_nb"\n'
    try:
        cases = [
            run_case(broker, "reorder", lambda c: c.set_features([FEATURES[i] for i in order]),
                     x_of=lambda x: [x[i] for i in order]),
            run_case(broker, "add_feature", lambda c: c.set_features([*FEATURES, "f3"]), x_of=lambda x: [*x, 7.5]),
            run_case(broker, "rename",
                     lambda c: c.set_models(nb.replace('"nb"', '"bayes"') + 'previous_name = "nb"\n')),
            run_case(broker, "rename_then_revert", lambda c: c.set_models(nb.replace('"nb"', '"bayes"')),
                     repair=lambda c: c.set_models(nb)),
            run_case(broker, "labels_as_text", lambda c: None, label=lambda y: {"a": 0, "b": 1}[y],
                     label_after=lambda y: {"a": "0", "b": "1"}[y]),
            run_case(broker, "permission", lambda c: _chmod(c, 0), prefix=NO_DAC, repair=lambda c: _chmod(c, 0o644)),
        ]
    finally:
        broker.stop()
    for case in cases:
        print(json.dumps(case))


if __name__ == "__main__":
    main()
