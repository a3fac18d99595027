"""A flow runner's shard size is left to the workers' device unless given."""

from __future__ import annotations

import pytest

from capsel.pipeline_config import RunnerParams


def test_a_runner_leaves_the_shard_size_to_the_workers_device_unless_given():
    assert RunnerParams().shard_size is None
    assert RunnerParams(shard_size=64).shard_size == 64
    with pytest.raises(ValueError, match="greater than 0"):
        RunnerParams(shard_size=0)
