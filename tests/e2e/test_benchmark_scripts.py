"""Every benchmark script imports what it uses (its --help runs); two of them also run, small, on the real SmolLM2."""

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import torch
import torch.nn.functional as F

from capsel.models.loading import describe_model, load_model
from capsel_lab.benchmark_tables import score_throughput_greedy_head
from tests.fixtures.real_models import smollm2_instruct  # noqa: F401 (fixture)

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
# a script runs as __main__; the modules beside it (synthetic_llama.py, gpu_monitor.py) are imported by the scripts
SCRIPTS = sorted(path.name for path in BENCHMARKS.glob("*.py") if '__name__ == "__main__"' in path.read_text())


def test_the_scripts_are_found():
    assert {"less_cost.py", "score_throughput.py", "gpu_throughput.py", "ingest.py"} <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_benchmark_script_imports_and_shows_its_help(script):
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), "--help"], capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout


@pytest.mark.slow
def test_score_throughput_times_the_other_heads_beside_the_engines_on_a_real_model(smollm2_instruct):  # noqa: F811
    """`--also-plain-head` and `--also-exact-greedy-head` as benchmarks/README.md runs them, on SmolLM2 (49,152
    vocabulary rows, 24 slices) and 4 rows instead of Gemma's 64: every pipeline timed, every result identical, the
    greedy steps' shape checked, and the tables rendered from the report."""
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "score_throughput.py"), "--model", str(smollm2_instruct.folder),
         "--n-candidates", "4", "--repeats", "1", "--batch-size", "4", "--threads", "1", "--engine-only",
         "--also-plain-head", "--also-exact-greedy-head"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    report = orjson.loads(done.stdout)
    for pipeline in ("engine_fused", "engine_fused_plain_head", "engine_fused_exact_greedy_head"):
        assert len(report[pipeline]["seconds_per_round"]) == 1
    for other in ("plain_head", "exact_greedy_head"):
        assert report[other] == {"rows_with_other_generated_ids": 0, "max_abs_layer_divergence_diff": 0.0,
                                 "results_identical": True}
    # at 4 rows the slices kept other bits on the CPUs measured, so these steps need not have screened
    greedy = report["greedy_head"]
    assert greedy["screens"] and greedy["passes_logits_through"] is True
    assert greedy["slices"] == 24 * greedy["steps"]
    rendered = score_throughput_greedy_head([report])
    assert f"{greedy['steps']:,}" in rendered and "| yes |" in rendered
    assert report["sliced_head"]["used"]
    assert len(report["engine_results_sha256"]) == 64 and report["process"]["minor_page_faults"] > 0
    assert any(shape["rows"] == 4 for shape in report["sliced_head"]["shapes_checked"])


@pytest.mark.slow
def test_cpu_kernels_times_each_product_and_scores_with_onednn_on_a_real_model(smollm2_instruct):  # noqa: F811
    """`cpu_kernels.py --engine-rows` as benchmarks/README.md runs it, on SmolLM2 and 4 rows: every product is timed
    each way with its bits compared to F.linear's, and the engine's two runs are compared row by row."""
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "cpu_kernels.py"), "--model", str(smollm2_instruct.folder), "--threads",
         "1", "--batch-size", "4", "--engine-rows", "4", "--engine-rounds", "1", "--other-batch-size", "2"],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    report = orjson.loads(done.stdout)
    head = [product for product in report["products"] if product["product"] == "head"]
    assert [product["rows"] for product in head] == [4, 4 * 48]
    assert all(product["weight"] == [49152, 576] for product in head)
    assert set(head[0]["ms"]) == {"linear", "slices", "onednn_packed"}
    # oneDNN's verdict recomputed here on the same seeded rows
    loaded = load_model(describe_model(str(smollm2_instruct.folder), dtype="float32", device="cpu"))
    weight = loaded.model.get_output_embeddings().weight.detach()
    torch.manual_seed(0)
    rows = torch.randn(4, 576)
    with torch.inference_mode():
        plain = F.linear(rows, weight)
        packed = torch.ops.mkldnn._reorder_linear_weight(weight, None)
        onednn = torch.ops.mkldnn._linear_pointwise(rows, packed, None, "none", [], "")
    assert head[0]["same_bits"]["onednn_packed"] == torch.equal(onednn, plain)
    assert head[0]["max_abs_diff"]["onednn_packed"] == pytest.approx(float((onednn - plain).abs().max()), abs=1e-9)
    blocks = [product for product in report["products"] if product["product"] != "head"]
    assert {tuple(product["weight"]) for product in blocks} == {(576, 576), (192, 576), (1536, 576), (576, 1536)}
    assert all(set(product["ms"]) == {"linear", "onednn_packed"} for product in blocks)
    engine = report["engine"]
    assert engine["rows"] == 4 and set(engine["seconds_per_round"]) == {"linear", "onednn"}
    assert 0 <= engine["rows_with_other_generated_ids"] <= 4
    assert engine["max_relative_ppl_diff"] is not None and engine["max_relative_ppl_diff"] < 1e-4
    # the same rows in batches of 2: within the contract too, and it says whether every bit stayed
    rebatched = engine["linear_at_batch_2"]
    assert set(rebatched) == {"rows_with_other_generated_ids", "max_abs_layer_divergence_diff",
                              "max_relative_ppl_diff", "same_bits"}
    assert rebatched["max_relative_ppl_diff"] < 1e-4
    assert rebatched["same_bits"] == (rebatched["max_abs_layer_divergence_diff"] == 0.0
                                      and rebatched["max_relative_ppl_diff"] == 0.0
                                      and rebatched["rows_with_other_generated_ids"] == 0)


def test_sandbox_cost_times_canonical_solutions_that_all_pass(tmp_path):
    out = tmp_path / "cost.json"
    done = subprocess.run([sys.executable, str(BENCHMARKS / "sandbox_cost.py"), "--problems", "3", "--rounds", "1",
                           "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = orjson.loads(out.read_bytes())
    assert result["passed_per_round"] == {"after": 3} and result["ms_per_program"]["after"][0] > 0
