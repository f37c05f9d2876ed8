"""The config schema: docs/config.md is generated from it, the shipped config's keys are all in
it, and every problem names the table, the key, the value and why."""

import copy
import dataclasses
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

from edgebayes.base import KINDS, learner_class
from edgebayes.drift.adwin import ADWINShared
from edgebayes.runtime import config_schema
from edgebayes.runtime.config import TABLES, ConfigError, load_config, parse_config
from edgebayes.runtime.config_docs import reference
from edgebayes.runtime.config_schema import Context, Table, markdown, type_ok

ROOT = Path(__file__).parent.parent
BASE = {"schema": {"features": ["a"]}, "models": [{"name": "m", "kind": "gaussian_nb"}]}
#: a valid entry of each array of tables, for setting one key at a time
ENTRIES = {"models": {"name": "m", "kind": "gaussian_nb"},
           "sources": {"kind": "json", "topic": "a/+", "device_level": -1, "features": {"a": "x"}}}


def problems(doc):
    try:
        parse_config(doc)
    except ConfigError as exc:
        return exc.problems
    return []


def with_key(table, key, value):
    doc = copy.deepcopy(BASE)
    if table in ENTRIES:
        doc[table] = [{**ENTRIES[table], key: value}]
    else:
        doc.setdefault(table, {})[key] = value
    return doc


def test_docs_config_md_is_the_generated_reference():
    out = subprocess.run([sys.executable, "-m", "edgebayes", "config-docs"], check=True, capture_output=True,
                         text=True, timeout=60)
    assert out.stdout == reference()
    assert (ROOT / "docs" / "config.md").read_text(encoding="utf-8") == out.stdout, (
        "docs/config.md is stale: run `edgebayes config-docs > docs/config.md`")


def test_the_shipped_config_loads_and_every_key_in_it_even_commented_out_is_in_the_schema():
    path = ROOT / "deploy" / "edgebayes.toml"
    load_config(path)
    table, seen = None, []
    for line in path.read_text(encoding="utf-8").splitlines():
        if m := re.match(r"#?\s*\[\[?(\w+)\]\]?\s*$", line):
            table = m[1]
        elif table and (m := re.match(r"#?\s*(\w+)\s*=", line)):
            seen.append((table, m[1]))
    assert {t for t, _ in seen} >= {"broker", "schema", "models", "homeassistant"}
    learner = {p for kind in KINDS for p in inspect.signature(learner_class(kind)).parameters}
    for table, key in seen:
        assert table in TABLES, table
        assert key in TABLES[table].all_keys() or (table == "models" and key in learner), (table, key)


def test_unknown_tables_and_keys_are_named_with_the_closest_known_one():
    doc = {**with_key("labels", "max_age", 3), "brokr": {}}
    doc["models"][0]["learning_rat"] = 0.1
    found = problems(doc)
    assert found[0].startswith("unknown table [brokr] (did you mean 'broker'?); known: broker, topics, ")
    assert found[1].startswith("[[models]] 'm' unknown key 'learning_rat' (did you mean 'learning_rate'?); "
                               "known: name, kind, previous_name, learning_rate, ")
    assert found[2] == "[labels] unknown key 'max_age' (did you mean 'max_age_s'?); known: max_pending, max_age_s"
    assert len(found) == 3


def test_wrong_types_in_the_input_tables_are_named_with_value_and_why():
    assert problems(with_key("sources", "label_values", "ON")) == [
        "[[sources]] #1 (json) label_values = 'ON': expected dict"]
    assert problems(with_key("sources", "features", ["x"])) == [
        "[[sources]] #1 (json) features = ['x']: expected dict"]
    assert problems({**BASE, "homeassistant": {"retire_after_s": "never", "drift": "light"}}) == [
        "[homeassistant] retire_after_s = 'never': expected int or float",
        "[homeassistant] drift = 'light': must be one of 'event', 'binary_sensor'"]
    assert problems({**BASE, "assembler": {"accept_retained": 1}}) == [
        "[assembler] accept_retained = 1: expected bool"]


def test_a_bad_feature_form_is_named_by_its_feature():
    assert problems(with_key("sources", "features", {"a": "p/#/q"})) == [
        "[[sources]] #1 (json) features.a = 'p/#/q': topic 'p/#/q' is not a valid MQTT topic filter"]


@pytest.mark.parametrize("table", list(TABLES))
def test_every_key_of_every_table_refuses_a_wrong_type_by_table_key_and_value(table):
    for key in TABLES[table].all_keys().values():
        wrong = next(v for v in ("wrong", 1.5, True, {"w": 1}) if not type_ok(v, key.types))
        found = problems(with_key(table, key.name, wrong))
        assert found and found[0].startswith(TABLES[table].header), (key.name, found)
        assert f" {key.name} = {wrong!r}: expected " in found[0], (key.name, found)


def test_the_drift_delta_default_is_adwins_own():
    assert parse_config(BASE).drift.delta == inspect.signature(ADWINShared).parameters["delta"].default


def test_a_table_is_a_dataclass_of_keys():
    @dataclasses.dataclass(frozen=True)
    class Servers:
        urls: tuple[str, ...] = config_schema.key(("nats://127.0.0.1:4222",), "the servers", lambda v: None if v else "is empty")
        timeout_s: float = config_schema.key(2.0, "the connect timeout, seconds", lambda v: None if v > 0 else "must be > 0")

    table = Table("cluster", Servers, "A cluster.")
    found = []
    assert table.parse({"urls": ["nats://a:4222"]}, Context(), found) == Servers(urls=("nats://a:4222",))
    assert table.parse({"urls": [], "timeout_s": "2", "timeout": 2}, Context(), found) is None
    assert found == ["[cluster] urls = []: is empty", "[cluster] timeout_s = '2': expected int or float",
                     "[cluster] unknown key 'timeout' (did you mean 'timeout_s'?); known: urls, timeout_s"]
    assert "| `timeout_s` | number | 2.0 | the connect timeout, seconds |" in markdown([table]).splitlines()


def test_keys_that_go_together_name_the_one_given():
    assert problems({**BASE, "broker": {"tls_key_file": "/k"}}) == [
        "[broker] tls_key_file = '/k' needs tls_cert_file: give both (mutual TLS) or neither"]
    assert problems({**BASE, "sources": [{"kind": "edgebayes"}]}) == [
        "[[sources]] #1 (edgebayes) topic: missing (the protocol prefix)"]
