"""Smoke test of bench/committee.py: a one-split run writes the "Seed 002" section of a results file,
once, in place, and bench.report keeps it."""

from bench import committee
from tests.conftest import needs_shared


@needs_shared("data/uci_australian_statlog/australian_statlog.csv")
def test_section_is_written_once_in_place_and_kept(tmp_path):
    results = tmp_path / "results.md"
    results.write_text("# r\n\n## 4. Cost\n\ncost\n\n## Where edgebayes is behind\n\n- nowhere\n")
    argv = ["--splits", "1", "--variant", "paper_sum", "--results", str(results)]
    assert committee.main(argv) == 0
    first = results.read_text()
    assert first.count(committee.SECTION) == 1
    assert first.index("## 4. Cost") < first.index(committee.SECTION) < first.index("## Where edgebayes is behind")
    assert "python -m bench.committee --splits 1 --variant paper_sum" in first  # says how to reproduce it
    assert "**Finding 1" in first and "**Finding 2" in first and "- `paper_sum`: MC 10 %:" in first
    kept = committee.kept_section(results)
    assert kept[0] == committee.SECTION and kept[-1].startswith("- `paper_sum`")
    assert committee.main(argv) == 0  # a second run replaces the section; seeded, the same figures
    assert results.read_text().count(committee.SECTION) == 1
    assert committee.kept_section(results)[3:] == kept[3:]  # after the Reproduce line (date, minutes)
    assert committee.kept_section(tmp_path / "none.md")[-1].startswith("Not run")
