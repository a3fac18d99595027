"""Fixtures for integration tests on real DuckDB files."""

from __future__ import annotations

import pytest

from capsel.db import open_db

# real registry models, installed once into $CAPSEL_MODELS_DIR or <repo>/.cache/models (slow tests only)
from tests.fixtures.real_models import (  # noqa: F401
    gemma3_270m_dir,
    real_models_env,
    smollm2_instruct,
    smollm2_instruct_dir,
)

# counting what the static greedy step ran (test_graph_steps, test_compiled_norms)
from tests.fixtures.step_capture import fed_steps, graph_replays  # noqa: F401


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A saved tiny llama with the word-level tokenizer, one per test module."""
    from tests.fixtures.pool import tiny_model_dir

    return tiny_model_dir(tmp_path_factory.mktemp("model") / "llama")


@pytest.fixture(scope="module")
def info(model_dir):
    """`model_dir` described for float32 CPU scoring."""
    from capsel.models.loading import describe_model

    return describe_model(str(model_dir), dtype="float32", device="cpu")


@pytest.fixture(scope="module")
def chat_info(tmp_path_factory):
    """A tiny llama whose tokenizer carries a chat template, described for float32 CPU scoring."""
    from capsel.models.loading import describe_model
    from tests.fixtures.pool import tiny_model_dir

    path = tiny_model_dir(tmp_path_factory.mktemp("model") / "llama-chat", chat=True)
    return describe_model(str(path), dtype="float32", device="cpu")


@pytest.fixture
def db(tmp_path):
    """A fresh capsel database file, closed after the test."""
    con = open_db(tmp_path / "capsel.duckdb")
    yield con
    con.close()


@pytest.fixture
def pool():
    """The two mixed candidate pools (every length regime twice): the fixture model's EOS ids make every
    exclusion reason occur in them."""
    from tests.fixtures.candidates import mixed_candidates

    return mixed_candidates() + mixed_candidates(seed=4, prefix="b")


@pytest.fixture
def con(db, pool):
    """A fresh database holding `pool`."""
    from tests.fixtures.pool import append_candidates

    append_candidates(db, pool)
    return db
