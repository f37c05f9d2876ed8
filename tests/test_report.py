"""Smoke test of bench/report.py: a tiny run writes docs/results.md with every table, sane numbers."""

import importlib.util
import re

from bench import report

# River is a bench extra: the report runs without it, and then has no River row
PEERS = ["River NB"] if importlib.util.find_spec("river") else []


def test_quick_report_has_every_table_and_sane_numbers(tmp_path):
    argv = ["--quick", "--samples", "300", "--streams", "AGR_G", "--systems", "NB", "SRP", *PEERS,
            "--jobs", "2", "--out", str(tmp_path)]
    assert report.main(argv) == 0
    text = (tmp_path / "results.md").read_text()
    for heading in ("## 1. Prequential accuracy", "## 2. Diversity and tree depth", "## 3. Naive Bayes",
                    "## 4. Cost", "## Where edgebayes is behind"):
        assert heading in text
    assert "python -m bench.report --quick --samples 300" in text  # says how to reproduce it

    row = re.search(r"^\| AGR_G \| (.+) \|$", text, re.MULTILINE).group(1).split(" | ")
    accuracies = [float(v.strip("*")) for v in row]
    assert len(accuracies) == 2 and all(40.0 < a < 100.0 for a in accuracies)  # NB, SRP (River NB: cost only)

    depth = re.search(r"^\| 300 \| ([-\d.]+) \| ([\d.]+) \|$", text, re.MULTILINE)
    assert -1.0 <= float(depth.group(1)) <= 1.0 and float(depth.group(2)) >= 1.0  # SRP's kappa and depth

    # data, n, features, classes, largest class, offline, exact, its differ, warm-up, ..., Alg. 2, ...
    cv = re.findall(r"^\| (\w+) \| \d+ \| \d+ \| \d+ \| \d+ \| ([\d.]+) ± [\d.]+ \| ([\d.]+) ± [\d.]+ \| (\d+) \|", text, re.MULTILINE)
    assert len(cv) == len(report.UCI)
    assert all(offline == exact and differ == "0" for _, offline, exact, differ in cv)  # online exact = offline

    cost = re.findall(r"^\| AGR_G \| (NB|SRP|River NB) \| [\d.]+ \| ([\d,]+) \| ([\d.]+) \| .+ \| (\d+) MB", text, re.MULTILINE)
    assert {c[0] for c in cost} == {"NB", "SRP", *PEERS}
    assert all(int(sps.replace(",", "")) > 0 and float(ratio) > 0 and int(rss) > 10 for _, sps, ratio, rss in cost)
