"""ARFF reader: small files written here (quoting, comments, missing values, nominal encoding,
sparse lines, gzip, malformed lines) and real data sets turned into ARFF, checked against the
CSV reader and the counts of their SOURCE.md."""

import gzip
import math

import numpy as np
import pytest

from edgebayes.streams import ARFFStream, open_stream
from tests.conftest import shared_path

SMALL = """% a comment
@RELATION 'test relation'

@attribute temperature numeric
@attribute 'wind speed' REAL
@Attribute outlook {sunny, 'over cast', rainy}
@attribute "count" integer
% another comment
@attribute class {yes,no}

@data
1.5, 2, sunny, 3, yes
?,-1e3,'over cast',4,no
% a comment line inside the data

2,0,rainy,?,'yes'
"""


def write(tmp_path, text, name="t.arff"):
    path = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    return path


def test_small_file_schema_values_and_labels(tmp_path):
    stream = open_stream(write(tmp_path, SMALL))
    schema = stream.schema
    assert schema.feature_names == ["temperature", "wind speed", "outlook", "count"]
    assert [f.kind for f in schema.features] == ["numeric", "numeric", "nominal", "numeric"]
    assert schema.features[2].categories == ("sunny", "over cast", "rainy")
    assert schema.target == "class" and schema.classes == ("yes", "no")
    assert schema.nominal == [2]
    rows = list(stream)
    assert [y for _, y in rows] == ["yes", "no", "yes"]
    assert rows[0][0].dtype == np.float64
    assert rows[0][0].tolist() == [1.5, 2.0, 0.0, 3.0]
    assert math.isnan(rows[1][0][0]) and rows[1][0][1:].tolist() == [-1000.0, 1.0, 4.0]
    assert rows[2][0][:3].tolist() == [2.0, 0.0, 2.0] and math.isnan(rows[2][0][3])
    assert repr(list(stream)) == repr(rows)  # iterating twice re-reads


def test_target_drop_and_gzip(tmp_path):
    stream = open_stream(write(tmp_path, SMALL, "t.arff.gz"), target="outlook", drop=["count"])
    assert stream.schema.feature_names == ["temperature", "wind speed", "class"]
    assert stream.schema.classes == ("sunny", "over cast", "rainy")
    X, y = stream.to_arrays()
    assert y == ["sunny", "over cast", "rainy"]
    assert X[:, 2].tolist() == [0.0, 1.0, 0.0]  # class {yes,no} as a nominal feature


def test_sparse_lines(tmp_path):
    text = "@relation s\n@attribute a numeric\n@attribute b {x,y}\n@attribute c numeric\n@attribute class {p,q}\n@data\n{0 2.5, 3 q}\n{1 y, 2 7}\n"
    X, y = open_stream(write(tmp_path, text)).to_arrays()
    assert X.tolist() == [[2.5, 0.0, 0.0], [0.0, 1.0, 7.0]]
    assert y == ["q", "p"]  # absent nominal entries take the first category


def test_numeric_target_keeps_text(tmp_path):
    text = "@relation r\n@attribute a numeric\n@attribute hour integer\n@data\n1,23\n2,0\n"
    stream = open_stream(write(tmp_path, text))
    assert stream.schema.classes is None
    assert [y for _, y in stream] == ["23", "0"]


@pytest.mark.parametrize("data, message", [
    ("1,2,sunny,3,yes\n1,2,sunny,yes\n", r"line 13: 4 values, the header declares 5"),
    ("1,2,sunny,3,yes\n1,x,sunny,3,no\n", r"line 13: non-numeric value 'x' for numeric attribute 'wind speed'"),
    ("1,2,cloudy,3,yes\n", r"line 12: value 'cloudy' of nominal attribute 'outlook' is not one of its categories"),
    ("1,2,sunny,3,?\n", r"line 12: missing label 'class'"),
    ("1,2,'sunny,3,yes\n", r"line 12: unbalanced quotes"),
    ("1,2,sunny,3,yes\n1,2,sunny,3,maybe\n", r"line 13: label 'maybe' of nominal attribute 'class' is not one of its categories"),
    ("{0 1, 4 z}\n", r"line 12: label 'z' of nominal attribute 'class' is not one of its categories"),
])
def test_malformed_data_lines_name_file_and_line(tmp_path, data, message):
    header = SMALL.split("@data")[0] + "@data\n"
    path = write(tmp_path, header + data, "bad.arff")
    with pytest.raises(ValueError, match=r"bad\.arff, " + message):
        list(open_stream(path))


@pytest.mark.parametrize("text, message", [
    ("", "empty file"),
    ("% only a comment\n", "empty file"),
    ("@relation r\n@attribute a numeric\n", "no @data"),
    ("@relation r\n@data\n1\n", "@data before any @attribute"),
    ("@relation r\n@attribute a\n@data\n", "bad @attribute"),
    ("@relation r\n@attribute a {x,y\n@data\n", "unclosed nominal"),
    ("@relation r\n@attribute s string\n@attribute c {a}\n@data\n", "unsupported type 'string'"),
    ("@relation r\nhello\n@data\n", "unexpected header line"),
])
def test_malformed_headers(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        open_stream(write(tmp_path, text))


def test_string_attribute_can_be_dropped_and_missing_columns(tmp_path):
    text = "@relation r\n@attribute id string\n@attribute a numeric\n@attribute c {u,v}\n@data\n'row 1',1,u\n"
    path = write(tmp_path, text)
    assert open_stream(path, drop=["id"]).to_arrays()[0].tolist() == [[1.0]]
    with pytest.raises(ValueError, match="no attribute 'label'"):
        ARFFStream(path, target="label")
    with pytest.raises(FileNotFoundError):
        open_stream(tmp_path / "absent.arff")


def csv_as_arff(csv_path, arff_path, nominal=()):
    """Write a CSV (one of the real data sets) as ARFF: empty fields as '?', nominal columns declared
    with their sorted values, the class nominal."""
    opener = gzip.open if csv_path.suffix == ".gz" else open
    with opener(csv_path, "rt") as f:
        lines = f.read().splitlines()
    names = lines[0].split(",")
    rows = [line.split(",") for line in lines[1:]]
    with open(arff_path, "w") as out:
        out.write("@relation converted\n")
        for j, name in enumerate(names):
            if name in nominal or j == len(names) - 1:
                values = sorted({r[j] for r in rows}, key=lambda v: (len(v), v))
                out.write(f"@attribute '{name}' {{{','.join(values)}}}\n")
            else:
                out.write(f"@attribute '{name}' numeric\n")
        out.write("@data\n")
        out.writelines(",".join(v if v else "?" for v in r) + "\n" for r in rows)
    return names


@pytest.mark.parametrize("path, drop, rows, features", [
    ("elec2/elec2.csv.gz", (), 45312, 8),
    ("wisdm_ar_v1.1/wisdm_ar_v1.1_transformed.csv.gz", ("UNIQUE_ID", "user"), 5418, 43),
    ("uci_heart_statlog/heart_statlog.csv", (), 270, 13),
])
def test_real_data_as_arff_matches_the_csv_reader(tmp_path, path, drop, rows, features):
    csv_path = shared_path(f"data/{path}")
    arff_path = tmp_path / "data.arff"
    csv_as_arff(csv_path, arff_path)
    Xc, yc = open_stream(csv_path, drop=drop).to_arrays()
    stream = open_stream(arff_path, drop=drop)
    Xa, ya = stream.to_arrays()
    assert Xa.shape == (rows, features) == Xc.shape
    np.testing.assert_array_equal(Xa, Xc)  # NaN where the CSV is empty, on both sides
    assert ya == yc and set(stream.schema.classes) == set(yc)


def test_elec2_day_is_nominal_index(tmp_path):
    arff_path = tmp_path / "elec.arff"
    csv_as_arff(shared_path("data/elec2/elec2.csv.gz"), arff_path, nominal=("day",))
    stream = open_stream(arff_path)
    day = stream.schema.features[1]
    assert day.kind == "nominal" and day.categories == ("1", "2", "3", "4", "5", "6", "7")
    x, y = next(iter(stream))
    assert x[1] == 1.0 and y == "UP"  # day "2" is the second category


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_utf8_bom_and_crlf(tmp_path, gz, newline):
    raw = b"\xef\xbb\xbf" + SMALL.replace("\n", newline).encode()
    path = tmp_path / ("bom.arff.gz" if gz else "bom.arff")
    path.write_bytes(gzip.compress(raw) if gz else raw)
    expected = open_stream(write(tmp_path, SMALL))
    stream = open_stream(path)
    assert stream.schema == expected.schema
    assert repr(list(stream)) == repr(list(expected))
    assert [y for _, y in stream] == ["yes", "no", "yes"]


def test_drop_naming_the_target_is_refused(tmp_path):
    path = write(tmp_path, SMALL)
    with pytest.raises(ValueError, match=r"t\.arff: attribute 'class' is both the target and dropped"):
        open_stream(path, drop=["class"])
    with pytest.raises(ValueError, match=r"attribute 'outlook' is both the target and dropped"):
        ARFFStream(path, target="outlook", drop=["outlook"])
