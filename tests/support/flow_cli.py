"""Start a flow the way a user does: `capsel flow <name> --config cfg.json` in a process of its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

from capsel.pipeline_config import PipelineConfig


def run_flow_cli(name: str, config: PipelineConfig, env: dict, cwd: Path, *options: str,
                 timeout_s: float = 300) -> subprocess.CompletedProcess:
    """`capsel flow <name>` with `config` as its parameter file (plus `options`); the one place tests spell it."""
    path = cwd / f"{name}-flow.json"
    path.write_bytes(orjson.dumps(config.record()))
    return subprocess.run([sys.executable, "-m", "capsel", "flow", name, "--config", str(path), *options],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout_s)
