"""Task: identify the scoring model (fingerprint, layers, tokenizer) as the workers will load it."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from capsel.orchestration.shard_worker import describe_spec
from capsel.pipeline_config import ModelSpec
from capsel.models.loading import ModelInfo


@task(name="describe-model", cache_policy=NO_CACHE)
def describe_model_task(spec: ModelSpec) -> ModelInfo:
    """Hash the model's files and read its config and tokenizer (weights are loaded by the workers)."""
    return describe_spec(spec)
