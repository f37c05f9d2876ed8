"""The [cluster] table: parsed by edgebayes.cluster.config, accepted beside the runtime's tables."""

from __future__ import annotations

import pytest

from edgebayes.cluster.config import ClusterConfig, load_cluster, parse_cluster
from edgebayes.runtime.config import ConfigError, load_config

BASE = """
[schema]
features = ["a", "b"]
[[models]]
name = "nb"
kind = "gaussian_nb"
"""


def test_defaults_own_every_partition():
    c = parse_cluster({"partitions": 8})
    assert c.own == tuple(range(8)) and c.lease_ttl_s == ClusterConfig.lease_ttl_s and c.replicas == 3


def test_own_is_sorted_without_repeats():
    assert parse_cluster({"partitions": 8, "own": [5, 1, 5]}).own == (1, 5)


def test_every_problem_is_listed():
    with pytest.raises(ConfigError) as err:
        parse_cluster({"partitions": 0, "own": [9], "lease_ttl_s": 0.5, "servers": ["host:4222"], "colour": 1})
    problems = "\n".join(err.value.problems)
    for what in ("unknown key 'colour'", "partitions must be", "own must be", "lease_ttl_s must be", "servers must be"):
        assert what in problems
    assert len(err.value.problems) == 5


def test_a_runtime_config_takes_a_cluster_table(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(BASE + '[cluster]\npartitions = 4\nservers = ["nats://10.0.0.1:4222"]\n')
    load_config(path)  # the runtime's own parser accepts the table
    assert load_cluster(path) == ClusterConfig(servers=("nats://10.0.0.1:4222",), partitions=4, own=(0, 1, 2, 3))


def test_no_cluster_table_is_a_single_runtime(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(BASE)
    assert load_cluster(path) is None
