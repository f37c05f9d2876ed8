"""CSV reader: the real files of ../shared/data (counts from their SOURCE.md) and small malformed files."""

import gzip
import math
from collections import Counter

import numpy as np
import pytest

from edgebayes.streams import CSVStream, open_stream
from tests.conftest import shared_path


@pytest.mark.parametrize(
    "path, drop, rows, features, classes",
    [
        ("elec2/elec2.csv.gz", (), 45312, 8, {"UP", "DOWN"}),
        ("weather_noaa/weather_noaa.csv.gz", (), 18159, 8, {"0", "1"}),
        ("occupancy_uci/occupancy.csv.gz", ("date",), 20560, 5, {"0", "1"}),
        ("powersupply/powersupply.csv.gz", (), 29928, 2, {str(h) for h in range(24)}),
        ("wisdm_ar_v1.1/wisdm_ar_v1.1_transformed.csv.gz", ("UNIQUE_ID", "user"), 5418, 43,
         {"Walking", "Jogging", "Upstairs", "Downstairs", "Sitting", "Standing"}),
        ("uci_iris/iris.csv", (), 150, 4, {"setosa", "versicolor", "virginica"}),
        ("uci_wine/wine.csv", (), 178, 13, {"class_0", "class_1", "class_2"}),
        ("uci_australian_statlog/australian_statlog.csv", (), 690, 14, {"0", "1"}),
    ],
)
def test_real_files_row_and_column_counts(path, drop, rows, features, classes):
    stream = open_stream(shared_path(f"data/{path}"), drop=drop)
    assert stream.schema.n_features == features
    assert stream.schema.target == "class"
    assert not set(drop) & set(stream.schema.feature_names)
    n, seen = 0, set()
    for x, y in stream:
        assert x.dtype == np.float64 and x.shape == (features,)
        n += 1
        seen.add(y)
    assert n == rows
    assert seen == classes


def test_elec2_first_row_and_class_counts():
    stream = open_stream(shared_path("data/elec2/elec2.csv.gz"))
    assert stream.schema.feature_names == [
        "date", "day", "period", "nswprice", "nswdemand", "vicprice", "vicdemand", "transfer"]
    x, y = next(iter(stream))
    assert x.tolist() == [0, 2, 0, 0.056443, 0.439155, 0.003467, 0.422915, 0.414912]
    assert y == "UP"


def test_wisdm_missing_cells_become_nan():
    stream = open_stream(shared_path("data/wisdm_ar_v1.1/wisdm_ar_v1.1_transformed.csv.gz"), drop=("UNIQUE_ID", "user"))
    X, y = stream.to_arrays()
    names = stream.schema.feature_names
    missing = {names[j]: int(c) for j, c in enumerate(np.isnan(X).sum(axis=0)) if c}
    assert missing == {"XPEAK": 381, "YPEAK": 131, "ZPEAK": 103}  # SOURCE.md
    assert Counter(y)["Standing"] == 246


def test_target_by_name_and_iterating_twice(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("a,label,b\n1,x,2\n3,y,\n")
    stream = open_stream(p, target="label")
    assert stream.schema.feature_names == ["a", "b"]
    first = [(x.tolist(), y) for x, y in stream]
    again = [(x.tolist(), y) for x, y in stream]
    assert repr(first) == repr(again)  # repr: NaN != NaN
    assert first[0] == ([1.0, 2.0], "x")
    assert first[1][0][0] == 3.0 and math.isnan(first[1][0][1]) and first[1][1] == "y"


def test_gzip_by_suffix(tmp_path):
    p = tmp_path / "t.csv.gz"
    with gzip.open(p, "wt") as f:
        f.write("a,b,class\n1.5,-2,u\n")
    X, y = open_stream(p).to_arrays()
    assert X.tolist() == [[1.5, -2.0]] and y == ["u"]


def test_n_samples_limits_a_file(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("a,class\n" + "".join(f"{i},c\n" for i in range(10)))
    X, _ = open_stream(p, n_samples=3).to_arrays()
    assert X[:, 0].tolist() == [0, 1, 2]


def test_missing_file():
    with pytest.raises(FileNotFoundError):
        open_stream("/nonexistent/x.csv")


@pytest.mark.parametrize("text", ["", "\n"])
def test_empty_file(tmp_path, text):
    p = tmp_path / "e.csv"
    p.write_text(text)
    with pytest.raises(ValueError, match=r"e\.csv: empty file"):
        open_stream(p)


def test_missing_target_and_drop_columns(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("a,b,class\n1,2,x\n")
    with pytest.raises(ValueError, match=r"no column 'label'"):
        open_stream(p, target="label")
    with pytest.raises(ValueError, match=r"no column 'date'"):
        open_stream(p, drop=["date"])


def test_non_numeric_feature_names_file_line_and_column(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("a,b,class\n1,2,x\n3,hello,y\n")
    stream = open_stream(p)
    with pytest.raises(ValueError, match=r"bad\.csv, line 3: non-numeric value 'hello' in feature column 'b'"):
        list(stream)


def test_wrong_field_count_and_empty_label(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("a,b,class\n1,2,x\n\n1,2\n")
    with pytest.raises(ValueError, match=r"bad\.csv, line 4: 2 fields, the header has 3"):
        list(open_stream(p))
    p.write_text("a,b,class\n1,2,\n")
    with pytest.raises(ValueError, match=r"line 2: empty label"):
        list(CSVStream(p))


def test_unknown_suffix(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("a\n")
    with pytest.raises(ValueError, match="unknown stream format"):
        open_stream(p)


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_utf8_bom_and_crlf(tmp_path, gz, newline):
    # Excel writes a BOM and CRLF: neither may reach a column name or a label
    text = newline.join(["a,b,y", "1,2,u", "3,,v", ""])
    raw = b"\xef\xbb\xbf" + text.encode()
    p = tmp_path / ("bom.csv.gz" if gz else "bom.csv")
    p.write_bytes(gzip.compress(raw) if gz else raw)
    stream = open_stream(p, target="y")
    assert stream.schema.feature_names == ["a", "b"]
    X, y = stream.to_arrays()
    assert repr(X.tolist()) == repr([[1.0, 2.0], [3.0, math.nan]]) and y == ["u", "v"]
    assert open_stream(p, target="a", drop=["y"]).schema.feature_names == ["b"]


def test_drop_naming_the_target_is_refused(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("a,b,class\n1,2,x\n")
    with pytest.raises(ValueError, match=r"t\.csv: column 'class' is both the target and dropped"):
        open_stream(p, drop=["class"])
    with pytest.raises(ValueError, match=r"column 'a' is both the target and dropped"):
        CSVStream(p, target="a", drop=["b", "a"])
