"""A flow's shard size by default: small on CPU workers, many batches' worth on GPU workers."""

from __future__ import annotations

import pytest

from capsel.methods.cap import CapSpec
from capsel.methods.less import LessSpec
from capsel.methods.spec import ModelSpec
from capsel.pipeline_config import RunnerParams
from capsel.runner.work import GPU_SHARD_SIZE, SHARD_SIZE, default_shard_size, workers_spec


@pytest.mark.parametrize(("device", "uses_gpus", "expected"), [
    ("auto", False, SHARD_SIZE), ("cpu", True, SHARD_SIZE), ("auto", True, GPU_SHARD_SIZE),
    ("cuda", False, GPU_SHARD_SIZE),
])
@pytest.mark.parametrize("method", [CapSpec, LessSpec])
def test_workers_on_a_gpu_get_shards_of_many_batches(method, device, uses_gpus, expected):
    spec = workers_spec(method(model=ModelSpec(path="m", device=device)), uses_gpus=uses_gpus, local_cuda=False)
    assert default_shard_size(spec) == expected
    assert GPU_SHARD_SIZE >= 16 * 256 > SHARD_SIZE


def test_a_runner_leaves_the_shard_size_to_the_workers_device_unless_given():
    assert RunnerParams().shard_size is None
    assert RunnerParams(shard_size=64).shard_size == 64
    with pytest.raises(ValueError, match="greater than 0"):
        RunnerParams(shard_size=0)
