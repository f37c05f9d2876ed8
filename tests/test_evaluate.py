"""Prequential evaluation (edgebayes.evaluate, edgebayes.metrics) and `edgebayes evaluate`."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from edgebayes.base import Learner
from edgebayes.cli import main as cli
from edgebayes.evaluate import PrequentialResult, prequential
from edgebayes.metrics import Accuracy, CohenKappa, WindowAccuracy
from edgebayes.naive_bayes import GaussianNB
from firmware_sim.cli import main as sim_cli
from tests.conftest import SHARED, needs_shared
from tests.data_files import SENSORS

ROOT = Path(__file__).resolve().parents[1]
ELEC_REL = "data/elec2/elec2.csv.gz"
ELEC = SHARED / ELEC_REL


class LastLabel(Learner):
    """Predicts the last label it learned: predictions are easy to count by hand."""

    def __init__(self):
        self.classes_ = []
        self.last = None

    def learn_one(self, x, y, w=1.0):
        if y == "bad":
            raise ValueError("label 'bad' refused")
        self.last = y

    def predict_proba_one(self, x):
        return {} if self.last is None else {self.last: 1.0}

    def memory_bytes(self):
        return 100


LABELS = ["a", "a", "b", "b", "a", "b"]
STREAM = [([float(i)], y) for i, y in enumerate(LABELS)]
# predictions: None a a b b a -> right: 0 1 0 1 0 0


def test_prequential_against_a_hand_count():
    result = prequential(LastLabel(), STREAM, window=3)
    assert isinstance(result, PrequentialResult)
    assert result.n_samples == 6
    assert result.accuracy == 2 / 6
    assert result.window_accuracy == 1 / 3  # last three: right, wrong, wrong
    # true a:3 b:3; predicted None:1 a:3 b:2 -> pe = (3*3 + 3*2)/36, p0 = 12/36
    assert result.kappa == pytest.approx((12 / 36 - 15 / 36) / (1 - 15 / 36), rel=1e-12)
    assert result.model_bytes == 100
    assert result.samples_per_s > 0 and result.elapsed_s > 0
    assert result.as_dict()["accuracy"] == 2 / 6


def test_callback_every_n_samples_and_n_samples_limit():
    seen = []
    result = prequential(LastLabel(), STREAM, window=3, every=2, callback=seen.append, n_samples=5)
    assert result.n_samples == 5
    assert [r.n_samples for r in seen] == [2, 4]
    assert [r.accuracy for r in seen] == [1 / 2, 2 / 4]
    default = []
    prequential(LastLabel(), STREAM * 2, window=4, callback=default.append)
    assert [r.n_samples for r in default] == [4, 8, 12]  # default period: the window


def test_prequential_tests_before_it_trains():
    model = GaussianNB()
    result = prequential(model, [([0.0], "a"), ([0.0], "a")])
    assert result.accuracy == 0.5  # the first prediction is None
    assert model.n_samples_seen_ == 2


def test_a_refused_sample_names_its_index():
    with pytest.raises(ValueError, match="sample 2: label 'bad' refused"):
        prequential(LastLabel(), [([0.0], "a"), ([0.0], "a"), ([0.0], "bad")])


@pytest.mark.parametrize("kwargs", [{"window": 0}, {"every": 0}, {"n_samples": -1}, {"every": 1.5}])
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        prequential(LastLabel(), STREAM, **kwargs)


def test_kappa_against_a_hand_computation():
    # 50 raters' pairs: yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> p0 = 0.7, pe = 0.5
    kappa = CohenKappa()
    for truth, pred, count in (("y", "y", 20), ("y", "n", 5), ("n", "y", 10), ("n", "n", 15)):
        for _ in range(count):
            kappa.update(truth, pred)
    assert kappa.get() == pytest.approx(0.4, abs=1e-15)


def test_kappa_edge_cases():
    kappa = CohenKappa()
    assert kappa.get() == 0.0
    for _ in range(3):
        kappa.update("a", "a")
    assert kappa.get() == 0.0  # pe = 1: chance explains everything, as River
    kappa.update("b", "b")
    assert kappa.get() == 1.0


def test_accuracy_and_window_accuracy():
    acc, win = Accuracy(), WindowAccuracy(window=2)
    assert acc.get() == win.get() == 0.0
    for truth, pred in (("a", "a"), ("a", "b"), ("b", "b"), ("b", "b")):
        acc.update(truth, pred)
        win.update(truth, pred)
    assert acc.get() == 3 / 4
    assert win.get() == 1.0
    win.update("a", None)
    assert win.get() == 0.5
    with pytest.raises(ValueError, match="window"):
        WindowAccuracy(window=0)


# ---------------------------------------------------------------- command line


def _run(capsys, *argv):
    code = cli(["evaluate", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


@needs_shared(ELEC_REL)
def test_cli_on_elec2_json(capsys):
    code, out, err = _run(capsys, "--model", "nb", "--data", ELEC, "--drop", "date", "--json")
    assert code == 0 and err == ""  # no progress bar when stderr is not a terminal
    result = json.loads(out)
    assert result["n_samples"] == 45312
    assert result["model"] == "nb"
    assert result["accuracy"] == pytest.approx(0.7360, abs=5e-4)  # SRP paper, NB on ELEC: 73.4 %
    assert 0.40 < result["kappa"] < 0.45
    assert result["model_bytes"] > 0 and result["samples_per_s"] > 0


@needs_shared(ELEC_REL)
def test_cli_learning_rate_and_samples(capsys):
    code, out, _ = _run(capsys, "--data", ELEC, "--drop", "date", "--learning-rate", "0.01", "--samples", "2000", "--json")
    result = json.loads(out)
    assert code == 0 and result["n_samples"] == 2000
    assert "learning_rate=0.01" in result["learner"]


def test_cli_text_output(capsys):
    code, out, _ = _run(capsys, "--data", SENSORS, "--samples", "100", "--window", "50")
    assert code == 0
    assert "samples          100" in out
    assert "accuracy" in out and "kappa" in out and "(last 50)" in out


def test_cli_same_command_same_figure_with_the_default_seed_printed(capsys):
    """No --seed: seed 1, printed; twice the same command, the same figures (a synthetic stream
    and SRP both draw from the seed)."""
    argv = ("--model", "srp", "--data", "synth:AGR_A", "--samples", "1500", "--json")
    first, second = (json.loads(_run(capsys, *argv)[1]) for _ in range(2))
    assert first["seed"] == 1 and "seed=1" in first["learner"]
    for key in ("accuracy", "kappa", "window_accuracy", "model_bytes"):
        assert first[key] == second[key], key
    code, out, _ = _run(capsys, *argv[:-1])
    assert code == 0 and "seed             1\n" in out


def test_cli_declares_the_streams_nominal_features_as_the_benchmarks_do(capsys):
    """AGRAWAL's elevel, car and zipcode (schema indices 3, 4, 5) are nominal for the tree and
    SRP's trees: the CLI's SRP is bench/srp.py's configuration, to the sample."""
    from bench.srp import PAPER, TREE
    from edgebayes.ensemble import SRPClassifier
    from edgebayes.streams import open_stream
    from edgebayes.tree import HoeffdingTreeClassifier

    out = json.loads(_run(capsys, "--model", "srp", "--data", "synth:AGR_A", "--samples", "1500", "--json")[1])
    assert "nominal_attributes=[3, 4, 5]" in out["learner"]
    stream = open_stream("synth:AGR_A", n_samples=1500, seed=1)
    assert stream.schema.nominal == [3, 4, 5]
    bench = SRPClassifier(model=HoeffdingTreeClassifier(**TREE, nominal_attributes=stream.schema.nominal),
                          seed=1, **PAPER)
    assert prequential(bench, stream).accuracy == out["accuracy"]
    tree = json.loads(_run(capsys, "--model", "ht", "--data", "synth:AGR_A", "--samples", "500", "--json")[1])
    assert "nominal_attributes=[3, 4, 5]" in tree["learner"]
    nb = json.loads(_run(capsys, "--model", "nb", "--data", "synth:AGR_A", "--samples", "500", "--json")[1])
    assert nb["learner"].startswith("GaussianNB(")  # no nominal features in a Gaussian model


@needs_shared(ELEC_REL)
def test_console_script_end_to_end():
    done = subprocess.run(
        [sys.executable, "-m", "edgebayes", "evaluate", "--model", "nb", "--data", str(ELEC), "--drop", "date", "--samples", "3000"],
        capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "samples          3,000" in done.stdout


def _bad_inputs(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    header_only = tmp_path / "header.csv"
    header_only.write_text("a,b,class\n")
    empty_gz = tmp_path / "empty.csv.gz"
    with gzip.open(empty_gz, "wt") as f:
        f.write("")
    words = tmp_path / "words.csv"
    words.write_text("a,class\nhot,x\n")
    return {
        "missing file": (["--data", tmp_path / "nope.csv"], "nope.csv"),
        "empty file": (["--data", empty], "empty"),
        "empty gzip file": (["--data", empty_gz], "empty"),
        "header only": (["--data", header_only], "no samples"),
        "missing target": (["--data", SENSORS, "--target", "species"], "species"),
        "missing drop column": (["--data", SENSORS, "--drop", "date"], "date"),
        "non-numeric feature": (["--data", words], "words.csv"),
        "bad learning rate": (["--data", SENSORS, "--learning-rate", "1.5"], "learning_rate"),
        "unknown format": (["--data", tmp_path / "data.txt"], "data.txt"),
    }


@pytest.mark.parametrize(
    "case",
    ["missing file", "empty file", "empty gzip file", "header only", "missing target", "missing drop column",
     "non-numeric feature", "bad learning rate", "unknown format"],
)
def test_cli_bad_input_one_line_exit_2(capsys, tmp_path, case):
    (tmp_path / "data.txt").write_text("a,class\n1,x\n")
    argv, needle = _bad_inputs(tmp_path)[case]
    code, out, err = _run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.startswith("edgebayes evaluate: error: ") and err.count("\n") == 1
    assert needle in err


def test_cli_text_in_a_feature_column_suggests_drop(capsys, tmp_path):
    dated = tmp_path / "dated.csv"
    dated.write_text("date,t,class\n2015-02-02 14:19:00,21.5,1\n")
    code, out, err = _run(capsys, "--data", dated)
    assert code == 2 and out == ""
    assert err == (f"edgebayes evaluate: error: {dated}, line 2: non-numeric value '2015-02-02 14:19:00' "
                   "in feature column 'date' (drop it with --drop date)\n")
    code, _, err = _run(capsys, "--data", SENSORS, "--target", "species")  # other errors: no hint
    assert code == 2 and "--drop" not in err


def test_budget_and_firmware_sim_suggest_drop_for_text_in_a_feature_column(capsys, tmp_path):
    dated = tmp_path / "dated.csv"
    dated.write_text("date,t,class\n2015-02-02 14:19:00,21.5,1\n")
    config = tmp_path / "c.toml"
    config.write_text('[schema]\nfeatures = ["date", "t"]\n[[models]]\nname = "nb"\nkind = "gaussian_nb"\n')
    problem = (f"{dated}, line 2: non-numeric value '2015-02-02 14:19:00' in feature column 'date' "
               "(drop it with --drop date)\n")
    assert cli(["budget", "--config", str(config), "--data", str(dated), "--samples", "1"]) == 2
    assert capsys.readouterr().err == f"edgebayes budget: {problem}"
    assert sim_cli(["run", "--broker", "127.0.0.1:1", "--source", str(dated), "--limit", "1"]) == 2
    assert capsys.readouterr().err == f"firmware-sim: {problem}"
