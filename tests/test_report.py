"""Smoke test of bench/report.py: a tiny run writes docs/results.md with every table, sane numbers;
the sections it does not compute are carried over as they stand, and the README points into them."""

import argparse
import importlib.util
import re
from pathlib import Path

from bench import committee, report, sections

REPO = Path(__file__).resolve().parents[1]

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


def _write_report_without_learners(out: Path, monkeypatch) -> str:
    """results.md as `report.write_report` assembles it in ``out`` from no rows (no learner runs)."""
    monkeypatch.setattr(report, "machine", lambda: "test machine")  # imports River and CapyMOA
    monkeypatch.setattr(report, "seed001_section", lambda *a: ["## 3. seed 001, not run here", ""])
    args = argparse.Namespace(samples=300, streams=["AGR_G"])
    path = report.write_report(out, args, "python -m bench.report", [], [], [], None, 0.0)
    return path.read_text()


def test_rewrite_keeps_the_components_section_as_it_stands(tmp_path, monkeypatch):
    """Section 5 (figures entered by hand from bench/*.py) and seed 002 are not computed by the
    report: rewriting results.md carries both over line for line, in place, once each."""
    components = [report.COMPONENTS + " (as entered)", "", "Figures of a shared 2-core machine, by hand:", "",
                  "| what | command | edgebayes | River |", "|---|---|---|---|",
                  "| marker | `python bench/nb.py` | 0.95 µs/sample, 73.6 % | 82 µs/sample |", "",
                  "Last line of the section."]
    seed002 = [committee.SECTION, "", "marker of seed 002"]
    previous = ["# old", "", "## 4. Cost", "", "old cost", "", *components, "", "", *seed002, "",
                "## Where edgebayes is behind", "", "- old"]
    (tmp_path / "results.md").write_text("\n".join(previous) + "\n")
    text = _write_report_without_learners(tmp_path, monkeypatch)
    assert "old cost" not in text and "- old" not in text.split("\n")  # the rest is rewritten
    lines = text.split("\n")
    start = lines.index(components[0])
    assert lines[start:start + len(components)] == components
    assert sections.kept_section(tmp_path / "results.md", report.COMPONENTS, "") == components
    assert sections.kept_section(tmp_path / "results.md", committee.SECTION, "") == seed002
    assert text.count(report.COMPONENTS) == 1 and text.count(committee.SECTION) == 1
    assert (text.index("## 4. Cost") < text.index(report.COMPONENTS) < text.index(committee.SECTION)
            < text.index("## Where edgebayes is behind"))


def test_rewrite_without_a_previous_file_names_each_kept_section(tmp_path, monkeypatch):
    """Without a results.md to keep them from, each kept section still has its heading (the README
    links to it) and a line saying where its figures come from."""
    text = _write_report_without_learners(tmp_path, monkeypatch)
    for heading, _ in report.KEPT:
        rest = text.split(heading + "\n\n", 1)[1]
        assert rest.startswith("Not ")


def _anchor(heading: str) -> str:
    """GitHub's anchor of a markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_readme_states_no_benchmark_figure_and_points_at_sections_that_exist():
    """The figures live in docs/results.md: the README's Results section names none, and every link
    from the README into docs/results.md lands on one of its headings."""
    readme = (REPO / "README.md").read_text()
    results = (REPO / "docs" / "results.md").read_text()
    anchors = {_anchor(line[3:]) for line in results.split("\n") if line.startswith("## ")}
    links = re.findall(r"\(docs/results\.md#([^)]+)\)", readme)
    assert _anchor(report.COMPONENTS[3:]) in links
    assert set(links) <= anchors, set(links) - anchors
    part = readme.split("\n## Results\n", 1)[1].split("\n## ", 1)[0]
    unit = r"\d[\d,.]*\s*(?:%|µs|ns|ms|[kMG]i?B|samples/s|readings/s|M samples|x (?:MOA|River))"
    assert not re.findall(unit, part)
