"""The [cluster] table: one of the runtime config's tables (edgebayes.runtime.config)."""

from __future__ import annotations

import pytest

from edgebayes.runtime.config import ClusterConfig, ConfigError, load_config

BASE = """
[schema]
features = ["a", "b"]
[[models]]
name = "nb"
kind = "gaussian_nb"
"""


def cluster(tmp_path, table: str) -> ClusterConfig | None:
    path = tmp_path / "c.toml"
    path.write_text(BASE + table)
    return load_config(path).cluster


def test_defaults_own_every_partition(tmp_path):
    c = cluster(tmp_path, "[cluster]\npartitions = 8\n")
    assert c.owned == tuple(range(8)) and c.lease_ttl_s == 6.0 and c.replicas == 3
    assert c.servers == ("nats://127.0.0.1:4222",)


def test_own_is_sorted_without_repeats(tmp_path):
    assert cluster(tmp_path, "[cluster]\npartitions = 8\nown = [5, 1, 5]\n").owned == (1, 5)


def test_every_problem_is_listed_with_its_key(tmp_path):
    with pytest.raises(ConfigError) as err:
        cluster(tmp_path, '[cluster]\npartitions = 0\nown = "some"\nlease_ttl_s = 0.5\nservers = ["host:4222"]\n'
                          "colour = 1\n")
    problems = "\n".join(err.value.problems)
    for what in ("unknown key 'colour'", "partitions = 0", "own = 'some'", "lease_ttl_s = 0.5", "servers = "):
        assert what in problems, problems
    assert len(err.value.problems) == 5


def test_owned_partitions_beyond_p_are_named(tmp_path):
    with pytest.raises(ConfigError) as err:
        cluster(tmp_path, "[cluster]\npartitions = 4\nown = [1, 9]\n")
    assert "partitions [9] are beyond partitions = 4" in str(err.value)


def test_a_runtime_config_takes_a_cluster_table(tmp_path):
    c = cluster(tmp_path, '[cluster]\npartitions = 4\nservers = ["nats://10.0.0.1:4222"]\n')
    assert c == ClusterConfig(servers=("nats://10.0.0.1:4222",), partitions=4)
    assert c.owned == (0, 1, 2, 3)


def test_no_cluster_table_is_a_single_runtime(tmp_path):
    assert cluster(tmp_path, "") is None
