"""Smoke test of bench/report.py: a tiny run writes docs/results.md with every table, sane numbers;
the sections it does not compute are carried over as they stand, and the README points into them."""

import argparse
import importlib.util
import json
import re
from pathlib import Path

import pytest

from bench import committee, report, sections
from tests.conftest import needs_shared

REPO = Path(__file__).resolve().parents[1]

# River is a bench extra: the report runs without it, and then has no River row
PEERS = ["River NB"] if importlib.util.find_spec("river") else []


@needs_shared("data")  # the real sets and iris
def test_quick_report_has_every_table_and_sane_numbers(tmp_path):
    argv = ["--quick", "--samples", "300", "--streams", "AGR_G", "--systems", "NB", "SRP", *PEERS,
            "--jobs", "2", "--out", str(tmp_path)]
    assert report.main(argv) == 0
    text = (tmp_path / "results.md").read_text()
    for heading in ("## 1. Prequential accuracy", "## 2. Diversity and tree depth", "## 3. Naive Bayes",
                    "## 4. Cost", "## Where edgebayes is behind"):
        assert heading in text
    assert "python -m bench.report --quick --samples 300" in text  # says how to reproduce it
    assert "| NB | 300 | - | 1 |" in text  # the header: samples of the synthetic streams, real sets, seeds

    row = re.search(r"^\| AGR_G \| (.+) \|$", text, re.MULTILINE).group(1).split(" | ")
    accuracies = [float(v.strip("*")) for v in row]
    assert len(accuracies) == 2 and all(40.0 < a < 100.0 for a in accuracies)  # NB, SRP (River NB: cost only)

    depth = re.search(r"^\| 300 \| ([-\d.]+) \| ([\d.]+) \|$", text, re.MULTILINE)
    assert -1.0 <= float(depth.group(1)) <= 1.0 and float(depth.group(2)) >= 1.0  # SRP's kappa and depth

    # data, n, features, classes, largest class, offline, exact, its differ, warm-up, ..., Alg. 2, ...
    cv = re.findall(r"^\| (\w+) \| \d+ \| \d+ \| \d+ \| \d+ \| ([\d.]+) ± [\d.]+ \| ([\d.]+) ± [\d.]+ \| (\d+) \|", text, re.MULTILINE)
    assert len(cv) == len(report.UCI)
    assert all(offline == exact and differ == "0" for _, offline, exact, differ in cv)  # online exact = offline

    # stream, system, samples, seeds, accuracy, samples/s, x River, bytes, peak RSS
    cost = re.findall(r"^\| AGR_G \| (NB|SRP|River NB) \| 300 \| 1 \| [\d.]+ \| ([\d,]+) \| ([\d.]+) \| .+ \| (\d+) MB", text, re.MULTILINE)
    assert {c[0] for c in cost} == {"NB", "SRP", *PEERS}
    assert all(int(sps.replace(",", "")) > 0 and float(ratio) > 0 and int(rss) > 10 for _, sps, ratio, rss in cost)


def _write_report_without_learners(out: Path, monkeypatch) -> str:
    """results.md as `report.write_report` assembles it in ``out`` from no rows (no learner runs)."""
    monkeypatch.setattr(report, "machine", lambda: "test machine")  # imports River and CapyMOA
    monkeypatch.setattr(report, "seed001_section", lambda *a: ["## 3. seed 001, not run here", ""])
    args = argparse.Namespace(samples=300, streams=["AGR_G"])
    path = report.write_report(out, args, "python -m bench.report", [], [], [], None, 0.0)
    return path.read_text()


def test_rewrite_keeps_the_figures_behind_choices_in_the_code_last(tmp_path, monkeypatch):
    """The last section (figures the docstrings point to, entered by hand) is not computed by the
    report: rewriting results.md carries it over line for line, once, after "Where edgebayes is behind"."""
    figures = ["## Figures behind choices in the code", "", "Entered by hand.", "",
               "- **marker choice** (`edgebayes.tree.learning`). `bench/tree.py`: 3 points.", "",
               "  | a | b |", "  |---|---|", "  | 1 | 2 |"]
    previous = ["# old", "", "## 4. Cost", "", "old cost", "", "## Where edgebayes is behind", "", "- old", "",
                *figures, ""]
    (tmp_path / "results.md").write_text("\n".join(previous) + "\n")
    text = _write_report_without_learners(tmp_path, monkeypatch)
    assert "old cost" not in text  # the rest is rewritten
    assert sections.kept_section(tmp_path / "results.md", figures[0], "") == figures
    assert text.count(figures[0]) == 1
    assert text.index("## Where edgebayes is behind") < text.index(figures[0])
    assert text.rstrip("\n").endswith(figures[-1])


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


# ------------------------------------------------------------------------------ seeds, spread, MOA


def _row(system, stream, seed, accuracy, n=1_000):
    """A row as `report.run_row` returns it, without running a learner."""
    return {"system": system, "stream": stream, "seed": seed, "n": n, "whole": stream in report.REAL,
            "accuracy": accuracy, "samples_per_s": 1000.0, "model_bytes": 1024, "peak_rss_mb": 50.0,
            "rss_growth_mb": 1.0, "curve": [], "cpu_s": 1.0}


#: Seeds 1-3 of NB, SRP and MOA at 1,000 samples on AGR_A and on the paper's ELEC (whole); River's
#: SRP on seed 1 only.
ROWS = [
    _row("NB", "AGR_A", 1, 0.60), _row("NB", "AGR_A", 2, 0.62), _row("NB", "AGR_A", 3, 0.64),
    _row("SRP", "AGR_A", 1, 0.90), _row("SRP", "AGR_A", 2, 0.91), _row("SRP", "AGR_A", 3, 0.95),
    _row("MOA SRP", "AGR_A", 1, 0.80), _row("MOA SRP", "AGR_A", 2, 0.95), _row("MOA SRP", "AGR_A", 3, 0.95),
    _row("River SRP", "AGR_A", 1, 0.83),
    _row("NB", "ELEC", 1, 0.70, n=45_312), _row("NB", "ELEC", 2, 0.70, n=45_312), _row("NB", "ELEC", 3, 0.70, n=45_312),
    _row("SRP", "ELEC", 1, 0.88, n=45_312), _row("SRP", "ELEC", 2, 0.89, n=45_312), _row("SRP", "ELEC", 3, 0.90, n=45_312),
    _row("MOA SRP", "ELEC", 1, 0.90, n=45_312), _row("MOA SRP", "ELEC", 2, 0.89, n=45_312),
    _row("MOA SRP", "ELEC", 3, 0.88, n=45_312),
    _row("River SRP", "ELEC", 1, 0.86, n=45_312),
    {"system": "River SRP", "stream": "ELEC", "seed": 2, "error": "killed"},  # left out of every cell
]


def test_cells_mean_sample_standard_deviation_and_diff_to_moa():
    cs = report.cells(ROWS[::-1])  # the rows end in any order
    assert list(cs["NB", "AGR_A"]["acc"]) == [1, 2, 3]
    mean, sd = report.mean_spread(cs["NB", "AGR_A"]["acc"].values())
    assert abs(mean - 62.0) < 1e-9 and abs(sd - 2.0) < 1e-9  # 60, 62, 64: sample sd (n - 1) is 2, not 1.63
    assert report.mean_spread([81.5]) == (81.5, None)  # one seed: no spread
    assert report.fmt_cell(62.0, 2.0) == "62.00 ± 2.00" and report.fmt_cell(81.5, None) == "81.50"
    assert set(cs["River SRP", "ELEC"]["acc"]) == {1}  # the failed seed is no cell's
    # the same seeds: the means' difference
    assert abs(report.moa_diff(cs, "SRP", "AGR_A") - (92.0 - 90.0)) < 1e-9
    assert abs(report.moa_diff(cs, "NB", "ELEC") - (70.0 - 89.0)) < 1e-9
    # River's seed 1 against MOA's seed 1 (80 %), not MOA's mean over its three (90 %)
    assert abs(report.moa_diff(cs, "River SRP", "AGR_A") - (83.0 - 80.0)) < 1e-9
    assert abs(report.moa_diff(cs, "River SRP", "ELEC") - (86.0 - 90.0)) < 1e-9
    assert report.moa_diff(cs, "MOA SRP", "AGR_A") == 0.0
    assert report.moa_diff(cs, "HT", "AGR_A") is None  # no cell
    # a stream of another length is another stream (drifts at n/4, ...): no difference
    longer = report.cells([r for r in ROWS if r["system"] != "River SRP"] + [_row("River SRP", "AGR_A", 1, 0.83, n=2_000)])
    assert report.moa_diff(longer, "River SRP", "AGR_A") is None


def _table(lines, first_column):
    """{first cell: [other cells]} of the markdown table whose header starts with ``first_column``."""
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first_column} |"))
    out = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        out[cells[0]] = cells[1:]
    return out


def _after(lines, prefix):
    return lines[next(i for i, line in enumerate(lines) if line.startswith(prefix)):]


def test_table_one_shows_mean_and_spread_ranks_of_the_means_and_the_difference_to_moa():
    cs = report.cells(ROWS)
    lines = report.section1(cs, ["AGR_A", "ELEC"], ["NB", "SRP", "MOA SRP"], "python -m bench.report", ["River SRP"])
    assert lines[0] == report.TABLE1_HEADING
    t1 = _table(lines, "stream")
    assert t1["AGR_A"] == ["62.00 ± 2.00", "**92.00 ± 2.65**", "90.00 ± 8.66"]
    assert t1["ELEC (paper, with date)"] == ["70.00 ± 0.00", "**89.00 ± 1.00**", "**89.00 ± 1.00**"]  # a tie
    # ranks of the means: AGR_A SRP 1, MOA 2, NB 3; ELEC SRP and MOA tie at 1.5, NB 3
    assert t1["*Avg rank*"] == t1["*Avg rank, the paper's streams*"] == ["3.00", "1.25", "1.75"]
    assert t1["*Avg rank synthetic*"] == ["3.00", "1.00", "2.00"]
    assert t1["*Avg rank real*"] == ["3.00", "1.50", "1.50"]
    river = _table(_after(lines, "**River's ensembles**"), "stream")  # a table of its own
    assert river["AGR_A"] == ["**83.00**"] and "River SRP" not in lines[lines.index("| stream | NB | SRP | MOA SRP |")]
    diff = _table(_after(lines, "**Difference to MOA**"), "stream")
    assert diff["AGR_A"] == ["+2.00"] and diff["ELEC (paper, with date)"] == ["+0.00"]  # SRP - MOA SRP
    paper = _table(_after(lines, "**Against the paper"), "stream")
    assert paper["AGR_A"] == ["62.00 (-3.74)", "92.00 (+0.21)", "90.00 (-1.79)"]
    assert paper["ELEC (paper, with date)"] == ["70.00 (-3.36)", "89.00 (+0.18)", "89.00 (+0.18)"]


def test_the_date_free_elec_has_no_paper_figure_and_the_header_says_samples_and_seeds():
    rows = [dict(r, stream="ELEC_NODATE") for r in ROWS if r["stream"] == "ELEC"] + [
        r for r in ROWS if r["stream"] == "AGR_A"]
    cs = report.cells(rows)
    lines = report.section1(cs, ["AGR_A", "ELEC_NODATE"], ["NB", "SRP", "MOA SRP"], "cmd", ["River SRP"])
    assert set(_table(_after(lines, "**Against the paper"), "stream")) == {"AGR_A"}  # not the paper's data
    assert set(_table(_after(lines, "The paper's Table I"), "stream")) == {"AGR_A"}
    head = _table(report.header(cs, ["AGR_A", "ELEC_NODATE"], ["NB", "River SRP", "MOA SRP"]), "column")
    assert head["NB"] == ["1,000", "whole", "1, 2, 3"]
    assert head["River SRP"] == ["1,000", "whole", "1"]
    cut = report.cells([dict(r, n=500, whole=False) if r["stream"] == "ELEC_NODATE" else r for r in rows])
    head = _table(report.header(cut, ["AGR_A", "ELEC_NODATE"], ["NB"]), "column")
    assert head["NB"] == ["1,000", "first 500 rows", "1, 2, 3"]


# ------------------------------------------------------------------------------ the plan


@needs_shared("data")  # the real sets and iris
def test_the_plan_runs_table_one_at_the_papers_length_and_rivers_ensembles_at_200000():
    """Table I's columns (ours and MOA's): the paper's 1,000,000 samples of each synthetic stream, 3
    seeds, the real sets whole; River's SRP and ARF in their own table at 200,000, one seed; a speed
    for every row of the full run."""
    for system in report.TABLE1:
        for stream in report.PRESETS:
            assert report.planned(system, stream) == (1_000_000, 3), (system, stream)
        for stream in report.REAL:
            assert report.planned(system, stream) == (None, 3)  # whole
    for system in report.RIVER_TABLE:
        assert report.planned(system, "AGR_A") == (200_000, 1) and report.planned(system, "ADS") == (None, 1)
    assert not set(report.RIVER_TABLE) & set(report.TABLE1)
    tasks = report.make_tasks(list(report.SYSTEMS), list(report.PRESETS) + list(report.REAL))
    assert all(t["stream"] in report.SPEED.get(t["system"], {}) for t in tasks)  # no speed guessed
    assert report.PLAN_JOBS == 2 and report.BUDGET_S == 3 * 3600
    wall = report.estimate_wall_s(tasks, report.PLAN_JOBS)
    cpu = sum(report.estimate_s(t["system"], t["stream"], t["samples"]) for t in tasks)
    assert cpu / 2 <= wall - report.SEED001_S <= cpu / 2 + max(report.estimate_s(t["system"], t["stream"], t["samples"])
                                                                 for t in tasks)
    assert report.plan_lines(tasks, 2)[-1].startswith(f"estimated wall time with --jobs 2: {wall / 3600:.2f} h")


def _plan_wall_s(plan) -> float:
    """The estimated wall seconds of the full run under ``plan`` in place of `report.PLAN`."""
    plan, saved = dict(plan), dict(report.PLAN)
    try:
        report.PLAN.clear()
        report.PLAN.update(plan)
        tasks = report.make_tasks(list(report.SYSTEMS), list(report.PRESETS) + list(report.REAL))
        return report.estimate_wall_s(tasks, report.PLAN_JOBS)
    finally:
        report.PLAN.clear()
        report.PLAN.update(saved)


@pytest.mark.xfail(strict=True, reason="estimated (SPEED, 2026-12-02): MOA's SRP and BAG at 1,000,000 samples and 3 "
                   "seeds take 5.2 h of CPU, River's SRP and ARF at 200,000 3.7 h: about 5.5 h of the two cores; "
                   "--resume carries the rows from one session to the next")
def test_the_full_run_fits_in_three_hours_on_two_cores():
    assert _plan_wall_s(report.PLAN) <= report.BUDGET_S


def test_tasks_seeds_overrides_and_curves():
    tasks = report.make_tasks(["SRP", "River SRP"], ["AGR_G", "ELEC"])
    srp = [t for t in tasks if t["system"] == "SRP" and t["stream"] == "AGR_G"]
    assert [t["seed"] for t in srp] == list(range(1, report.PLAN["SRP"]["seeds"] + 1))
    assert [t["samples"] for t in srp] == [report.PLAN["SRP"]["samples"]] * len(srp)
    assert [t["curve_every"] > 0 for t in srp] == [True] + [False] * (len(srp) - 1)  # the curves: seed 1 only
    assert all(t["samples"] is None and t["curve_every"] == 0 for t in tasks if t["stream"] == "ELEC")
    small = report.make_tasks(["SRP", "River SRP"], ["AGR_G", "ELEC"], samples=3_000, seeds=2)
    assert len(small) == 8 and {t["samples"] for t in small} == {3_000} and {t["seed"] for t in small} == {1, 2}


def test_makespan_runs_the_longest_first():
    """`run_rows` starts the longest rows first, each on the first free job: the estimate is that
    schedule's end, never less than the CPU seconds over the jobs nor than the longest row."""
    assert report.makespan([1, 1, 1, 1], 2) == 2
    assert report.makespan([7, 1, 1], 2) == 7
    assert report.makespan([5, 4, 3, 3, 3], 2) == 10  # 5+3, 4+3+3 (the best split, 9, is not what runs)
    assert report.makespan([3, 3, 3, 4, 5], 1) == 18


@needs_shared("data/elec2/elec2.csv.gz")  # the real sets
def test_the_papers_elec_keeps_its_date_column_and_the_other_drops_it():
    """The paper's ELEC (MOA gives its Table I on it) has `date` as its first feature; ELEC (no date)
    is the same rows without it."""
    X, y, schema = report.load("ELEC", None)
    X2, y2, schema2 = report.load("ELEC_NODATE", None)
    assert schema.feature_names[0] == "date" and "date" not in schema2.feature_names
    assert X.shape == (45_312, 8) and X2.shape == (45_312, 7) and y == y2
    assert (X[:, 1:] == X2).all()
    assert report.label("ELEC") == "ELEC (paper, with date)" and report.label("ELEC_NODATE") == "ELEC (no date)"
    assert "ELEC" in report.PAPER and "ELEC_NODATE" not in report.PAPER


def test_a_resumed_run_runs_only_the_rows_its_file_lacks(tmp_path):
    """`--resume FILE`: each finished row is appended to FILE at once; a second run with more tasks
    takes the rows FILE holds as they are and runs the others (a row that failed is run again)."""
    rows_file = tmp_path / "rows.jsonl"
    first = report.make_tasks(["NB"], ["AGR_A"], samples=200, seeds=2)
    rows = report.run_rows(first, 2, rows_file)
    assert len(rows_file.read_text().splitlines()) == 2 and {r["seed"] for r in rows} == {1, 2}
    with open(rows_file, "a") as f:  # a failed row of a third seed: not taken
        f.write(json.dumps({"task": {**first[0], "seed": 3}, "row": {"error": "killed"}}) + "\n")
        f.write('{"task": {"system": "NB", "stre\n')  # a line cut short by a kill: skipped
    more = report.make_tasks(["NB"], ["AGR_A"], samples=200, seeds=3)
    again = report.run_rows(more, 2, rows_file)
    assert len(rows_file.read_text().splitlines()) == 5  # only seed 3 ran
    assert sorted(again, key=lambda r: r["seed"])[:2] == sorted(rows, key=lambda r: r["seed"])
    assert {r["seed"] for r in again} == {1, 2, 3} and all("error" not in r for r in again)


def test_the_reproduce_command_leaves_out_where_rows_are_kept():
    assert report.reproduce_command(["--jobs", "2", "--resume", "/tmp/r.jsonl", "--seeds", "2"]) == \
        "python -m bench.report --jobs 2 --seeds 2"
    assert report.reproduce_command(["--resume=/tmp/r.jsonl", "--systems", "MOA SRP"]) == \
        "python -m bench.report --systems 'MOA SRP'"


# ------------------------------------------------------------------------------ nominal attributes, behind


@needs_shared("data")  # the real sets and iris
def test_a_real_sets_nominal_attribute_reaches_moa_as_an_arff_nominal(tmp_path):
    """ELEC's day (codes 1..7 in the CSV) is nominal for every system: the schema says so, and the
    ARFF file MOA reads declares it {0,...,6} with each row's index; NOMAO has its 29."""
    from bench.srp import write_arff

    X, y, schema = report.load("ELEC", None)
    day = schema.feature_names.index("day")
    assert schema.nominal == [day] and schema.features[day].categories == tuple("1234567")
    write_arff(tmp_path / "s.arff", X, y, schema)
    head, data = (tmp_path / "s.arff").read_text().split("@data\n")
    assert "@attribute day {0,1,2,3,4,5,6}" in head and "@attribute period numeric" in head
    assert {line.split(",")[day] for line in data.splitlines()} <= set("0123456")
    assert len(report.load("NOMAO", 5)[2].nominal) == 29
    assert report.load("ADS", 5)[2].nominal == []  # the paper's run read ADS as numbers (report.NOMINAL)


def test_behind_lists_every_peer_ahead_by_more_than_the_seeds_spread():
    """A peer ahead of our same algorithm (River NB over our NB on a real set, one seed) or of our best
    by more than the larger of the two cells' spreads is listed; a lead within the spread is not."""
    row = lambda system, seed, acc: {"system": system, "stream": "NOMAO", "seed": seed, "n": 100, "accuracy": acc}
    rows = [row("NB", s, 0.75) for s in (1, 2, 3)] + [row("River NB", 1, 0.876)]
    rows += [row("SRP", s, a) for s, a in ((1, 0.970), (2, 0.972), (3, 0.974))]  # 97.20 ± 0.20
    rows += [row("MOA SRP", s, a) for s, a in ((1, 0.972), (2, 0.974), (3, 0.976))]  # 97.40 ± 0.20: within
    rows += [row("River ARF", 1, 0.9745)]  # 0.25 over our best, spread 0.20
    lines = report.accuracy_behind(report.cells(rows), "NOMAO")
    assert lines == [
        "- Accuracy on NOMAO: River ARF 97.45 % vs our best (SRP) 97.20 % (0.25 points behind; seeds' spread 0.20).",
        "- Accuracy on NOMAO: River NB 87.60 % vs our NB 75.00 % (12.60 points behind; seeds' spread 0.00).",
    ]


def test_the_claims_give_each_verdict_from_the_numbers():
    """Ranks over the paper's columns (SRP first, a tie, or another first), the real-set order
    SRP >= BAG >= SRS per set, and the depth and kappa curves checkpoint by checkpoint."""
    from bench import sections

    acc = {"AGR_A": {"NB": 60.0, "HT": 70.0, "SRP": 90.0, "SRS": 89.0, "BAG": 80.0},
           "NOMAO": {"NB": 80.0, "HT": 90.0, "SRP": 96.0, "SRS": 97.0, "BAG": 98.0},
           "ADS": {"NB": 80.0, "HT": 90.0, "SRP": 99.0, "SRS": 97.0, "BAG": 98.0}}
    curves = {"LED_A": {"SRP": [(1, 0, 0.3, 5.0), (2, 0, 0.3, 9.0)], "BAG": [(1, 0, 0.8, 6.0), (2, 0, 0.9, 8.0)],
                        "SRS": [(1, 0, 0.2, 1.0), (2, 0, 0.2, 2.0)]}}
    lines = sections.claims_section(acc, curves, report.PAPER, {"NOMAO", "ADS"}, "1,000 samples", "cmd")
    assert lines[0] == sections.CLAIMS
    one, two, three, four, five = (next(x for x in lines if x.startswith(f"{k}. ")) for k in range(1, 6))
    assert "1,000 samples) and the paper's columns it runs: holds: SRP 1.67, BAG 2.00, SRS 2.33" in one
    assert "Real sets: does not hold (BAG first): BAG 1.50, SRP 2.00, SRS 2.50" in two
    assert "holds on 1 of 2 real sets (ADS); BAG above SRP on NOMAO (+2.00); SRS above BAG on none" in three
    assert four.endswith("Does not hold at every checkpoint: LED_A: SRP above BAG at 1 of 2 checkpoints; "
                         "LED_A: SRP above SRS at 2 of 2 checkpoints.")
    assert "Holds: LED_A: SRP below BAG at 2 of 2 checkpoints; LED_A: SRS below BAG at 2 of 2" in five


def test_moa_reads_elecs_day_as_a_nominal_attribute(tmp_path):
    """What MOA itself makes of the ARFF file: ELEC's day nominal with its 7 values, period numeric."""
    pytest.importorskip("capymoa", reason="capymoa is not installed (MOA's columns need it)")
    from capymoa.stream import ARFFStream

    from bench.srp import write_arff

    X, y, schema = report.load("ELEC", None)
    write_arff(tmp_path / "elec.arff", X[:100], y[:100], schema)
    header = ARFFStream(str(tmp_path / "elec.arff")).get_schema().get_moa_header()
    day, period = (schema.feature_names.index(n) for n in ("day", "period"))
    assert header.attribute(day).isNominal() and header.attribute(day).numValues() == 7
    assert header.attribute(period).isNumeric()


def test_nb_mixed_row_equals_moas_naive_bayes_row():
    """The NB mixed column is MOA's NaiveBayes: on NOMAO's first 3,000 rows (29 nominal
    attributes) its row's accuracy is MOA NB's, sample for sample (the same count right)."""
    pytest.importorskip("capymoa", reason="capymoa is not installed (MOA's columns need it)")
    task = {"stream": "NOMAO", "samples": 3000, "seed": 1}
    ours = report.run_row({**task, "system": "NB mixed"})
    moa = report.run_row({**task, "system": "MOA NB"})
    assert ours["n"] == moa["n"] == 3000
    assert round(ours["accuracy"] * 3000) == round(moa["accuracy"] * 3000)
