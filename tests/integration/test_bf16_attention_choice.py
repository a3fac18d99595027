"""bf16 on CPU takes an attention kernel that runs here: with ATen's kernels capped below AVX-512 on a CPU with AMX,
torch 2.13's bf16 SDPA raises from 64 positions on, and capsel then loads eager attention (measured on an AVX-512
Xeon with AMX under ATEN_CPU_CAPABILITY=avx2 and =default). Each capability runs in a process of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys, torch, torch.nn.functional as F
from capsel.models.loading import describe_model, load_model
query = torch.randn(1, 2, 80, 8, dtype=torch.bfloat16)
try:
    F.scaled_dot_product_attention(query, query, query, is_causal=True)
    plain = True
except RuntimeError:
    plain = False
loaded = load_model(describe_model(sys.argv[1], dtype="bfloat16", device="cpu"))
ids = torch.arange(3, 83).remainder(loaded.model.config.vocab_size - 3).add(3).unsqueeze(0)
with torch.no_grad():
    logits = loaded.model(input_ids=ids).logits
print(json.dumps({"plain_sdpa_runs": plain, "attention": loaded.model.config._attn_implementation,
                  "finite": bool(torch.isfinite(logits.float()).all())}))
"""


@pytest.mark.parametrize("capability", ["avx2", "default", None])
def test_a_bf16_model_runs_80_positions_under_each_cpu_capability(model_dir, capability):
    env = {key: value for key, value in os.environ.items() if key != "ATEN_CPU_CAPABILITY"}
    if capability is not None:
        env["ATEN_CPU_CAPABILITY"] = capability
    done = subprocess.run([sys.executable, "-c", PROBE, str(model_dir)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["finite"]
    assert seen["attention"] == ("sdpa" if seen["plain_sdpa_runs"] else "eager")
