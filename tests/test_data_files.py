"""The committed data files of tests/data are what tests/data_files.py writes."""

from tests.data_files import SENSORS, SENSORS_ROWS, sensors_csv


def test_sensors_csv_is_the_generators_output():
    text = sensors_csv()
    assert text.count("\n") == SENSORS_ROWS + 1
    assert SENSORS.read_text() == text
