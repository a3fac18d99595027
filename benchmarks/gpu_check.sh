#!/usr/bin/env bash
# One command for a fresh CUDA machine (about 10 minutes on one H100): installs vLLM and capsel from the
# package registry into .venv-gpu, then runs
#   1. the CUDA tests (pytest -m gpu: vLLM against HF greedy, GPU memory freed, bf16 scoring, batch sizing),
#   2. the bf16-vs-float32 rank correlation (tests/integration/test_bf16_ranks.py, CPU and CUDA cases),
#   3. benchmarks/gpu_throughput.py on the Llama-3-8B-shaped model, --generator vllm and --generator fused,
#   4. benchmarks/peer_pipeline.py: the paper-style pipeline (vLLM or HF generate for y-hat, two full forwards
#      with output_hidden_states) beside the engine on the same model and pool, their ratio and rank agreement,
# and writes each benchmark's JSON under benchmarks/results/ (<device>-<date>.json).
#
#   bash benchmarks/gpu_check.sh              # the GPU run
#   bash benchmarks/gpu_check.sh --dry-run    # any machine: resolve the install (nothing installed) and run the
#                                             # CPU parts with the Python in $CPU_PY (default .venv-vllm, else .venv)
#   GPU_PY=python3 WHEELS=.whl bash benchmarks/gpu_check.sh
#                                             # a machine with no registry whose python3 already has CUDA torch and
#                                             # transformers: the wheels capsel lacks there go into a scratch folder
#                                             # (pip --target), capsel is built from this tree, and the vllm route
#                                             # runs only if that Python has vLLM (else it says it skipped it)
#
# Environment: BEFORE_TREE (a folder holding an earlier capsel tree, e.g. from `git archive`: its own
# benchmarks/gpu_throughput.py runs on the same machine right after this tree's, so an engine change is measured
# before and after in one call; BEFORE_LABEL names it in the saved file), KV_LAYOUTS (e.g. "whole dynamic": one more
# fused run of this tree per KV cache layout named, in the same call, saved as kv-<layout>-<device>-<date>.json),
# PREFILL_GROUPS (e.g. "on": one more fused run per --prefill-groups value), BATCH_SIZES (e.g. "512": one more fused
# run per --batch-size), COMPILED (e.g. "off": one more fused run per --compile-norms-and-mlps value), SHARD_SIZES
# (e.g. "2048": one more fused run per --shard-size), PROFILE=1 (one more run of this tree with --profile),
# DECODE_PROFILE (e.g. "dynamic graphed+compiled": decode_profile.py, one fused batch's synced phases and top kernels,
# once per KV layout named, "+compiled" or "+eager" with the norms and MLPs compiled or not), VLM=1
# (benchmarks/multimodal_throughput.py, Llava-1.5-7B shape, once per KV layout in VLM_KV_LAYOUTS, default "auto"),
# PEER=0 (leave out step 4), N_PEER (its pool size, default 1024), N_CANDIDATES (pool size of each benchmark run, default 2048), VLLM_SPEC (default vllm==0.32.0, the
# release whose CPU build passes the parity tests here; capsel is installed within infra/vllm-constraints.txt),
# GPU_VENV (default .venv-gpu), WHEELS (a folder of wheels: install from it alone, for a machine without a registry),
# GPU_PY (use this Python instead of building a venv), RESULTS_DIR (where the benchmark JSON goes, default
# benchmarks/results).
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=gpu
[[ -n "${GPU_PY:-}" ]] && MODE=lent
[[ "${1:-}" == "--dry-run" ]] && MODE=dry
RESULTS_DIR=${RESULTS_DIR:-benchmarks/results}
mkdir -p "$RESULTS_DIR"
N_CANDIDATES=${N_CANDIDATES:-2048}
VLLM_SPEC=${VLLM_SPEC:-vllm==0.32.0}
CONSTRAINTS=(-c infra/vllm-constraints.txt)
GPU_VENV=${GPU_VENV:-.venv-gpu}
PIP_SOURCE=()
[[ -n "${WHEELS:-}" ]] && PIP_SOURCE=(--no-index --find-links "$WHEELS")

step() { printf '\n== [%4ds] %s\n' "$SECONDS" "$*"; }

if [[ "$MODE" == dry ]]; then
    PY=${CPU_PY:-}
    if [[ -z "$PY" ]]; then
        PY=.venv/bin/python
        [[ -x .venv-vllm/bin/python ]] && PY=.venv-vllm/bin/python
    fi
    step "install, resolved only (pip --dry-run in a scratch venv): $VLLM_SPEC, then capsel[dev] and the gpu extras"
    scratch=$(mktemp -d)
    python3 -m venv "$scratch/venv"
    "$scratch/venv/bin/pip" install --quiet --upgrade pip
    # Two resolutions, as the install runs: vLLM first (it brings the CUDA torch it was built against), then capsel,
    # which keeps that vLLM (its fastapi pin loses to prefect's, as in .venv-vllm).
    "$scratch/venv/bin/pip" install --dry-run --ignore-installed "${PIP_SOURCE[@]}" "${CONSTRAINTS[@]}" "$VLLM_SPEC" \
        --report "$scratch/vllm.json" --quiet 2>&1 | grep -v '^WARNING: Location' || true
    "$scratch/venv/bin/pip" install --dry-run --ignore-installed "${PIP_SOURCE[@]}" "${CONSTRAINTS[@]}" -e '.[dev]' \
        accelerate nvidia-ml-py --report "$scratch/capsel.json" --quiet 2>&1 | grep -v '^WARNING: Location' || true
    "$scratch/venv/bin/python" - "$scratch/vllm.json" "$scratch/capsel.json" <<'EOF'
import json, sys
# The second step keeps the torch and vLLM the first installed, so only its own picks are shown.
shown = {"vllm.json": ("vllm", "torch", "transformers", "fastapi"),
         "capsel.json": ("capsel", "transformers", "fastapi", "accelerate", "nvidia-ml-py")}
for path in sys.argv[1:]:
    name = path.rsplit("/", 1)[1]
    picked = {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in json.load(open(path))["install"]}
    print(f"{name}: {len(picked)} packages, among them", ", ".join(f"{p} {picked[p]}" for p in shown[name] if p in picked))
EOF
    rm -rf "$scratch"
elif [[ "$MODE" == lent ]]; then
    PY=$GPU_PY
    step "$PY as it is, plus capsel built from this tree and the wheels in ${WHEELS:-(none)}"
    # capsel is built from this tree (sql/, flows/ and tasks/ only become capsel.sql etc. in a build) and goes,
    # with the wheels, into a scratch folder ahead of the tree on PYTHONPATH; the tree still provides tests/.
    site=$(mktemp -d)
    WHEEL_SITE=$(mktemp -d)
    "$PY" -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir --target "$site" .
    if [[ -n "${WHEELS:-}" ]]; then
        "$PY" -m pip install -q --no-index --no-deps --no-cache-dir --target "$WHEEL_SITE" "$WHEELS"/*.whl
    fi
    export PYTHONPATH="$site:$WHEEL_SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"
    "$PY" -c "import torch, transformers; assert torch.cuda.is_available(), 'no CUDA GPU visible'; \
print('torch', torch.__version__, 'transformers', transformers.__version__, torch.cuda.get_device_name(0))"
else
    step "install: $VLLM_SPEC, then capsel[gpu,dev] into $GPU_VENV"
    python3 -m venv "$GPU_VENV"
    "$GPU_VENV/bin/pip" install --quiet --upgrade pip || true
    "$GPU_VENV/bin/pip" install --quiet "${PIP_SOURCE[@]}" "${CONSTRAINTS[@]}" "$VLLM_SPEC"
    "$GPU_VENV/bin/pip" install --quiet "${PIP_SOURCE[@]}" "${CONSTRAINTS[@]}" -e '.[gpu,dev]'
    PY=$GPU_VENV/bin/python
    "$PY" -c "import torch, vllm; assert torch.cuda.is_available(), 'no CUDA GPU visible'; \
print('torch', torch.__version__, 'vllm', vllm.__version__, torch.cuda.get_device_name(0))"
fi

step "CUDA tests (pytest -m gpu; they skip without a GPU)"
# Only the files that hold CUDA tests are collected: a machine with no registry lacks the server-side packages
# (Prefect, great-expectations) that other test files import.
mapfile -t GPU_TEST_FILES < <(grep -rl 'mark\.gpu' tests --include='test_*.py' | sort)
"$PY" -m pytest -q -rs -m gpu -p no:cacheprovider "${GPU_TEST_FILES[@]}" || echo "CUDA tests FAILED (the runs below go on)"

step "bf16-vs-float32 rank correlation (Spearman of CAP >= 0.99)"
"$PY" -m pytest -q -p no:cacheprovider tests/integration/test_bf16_ranks.py

LOGS=$(mktemp -d)
# One benchmark run: its JSON saved in the folder $2, its output (vLLM's log too) in $LOGS, the headline printed.
throughput() {
    local name=$1 results=$2 saved
    shift 2
    if ! "$PY" "${PY_SCRIPT:-benchmarks/gpu_throughput.py}" "$@" --save --results-dir "$results" > "$LOGS/$name.log" 2>&1; then
        tail -30 "$LOGS/$name.log"
        return 1
    fi
    saved=$(sed -n 's/^saved //p' "$LOGS/$name.log")
    "$PY" - "$saved" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
e = r["end_to_end"]
scoring = r["phases"]["scoring"]
layout = scoring.get("kv_layout", "?") + (f", {scoring['graph_captures']} graph captures" if scoring.get("graph_captures") else "")
print(f"{sys.argv[1]}: {r['generator']}, KV {layout}, {e['candidates']} candidates on {r['device']['name']}")
print(f"  end to end {e['candidates_per_s']} cand/s ({e['candidates_per_s_with_startup']} with {e['startup_s']} s start-up)")
for name, phase in r["phases"].items():
    print(f"  {name}: {phase['candidates_per_s']} cand/s (model {phase['model_s']} s, write {phase['write_s']} s)")
PY
}

# The fused route once more per value of each variable named here (its gpu_throughput.py option beside it): a
# label, the results folder, then the arguments every run takes. A run that fails says so and the next one goes on.
VARIANTS=("KV_LAYOUTS --kv-layout" "PREFILL_GROUPS --prefill-groups" "COMPILED --compile-norms-and-mlps"
          "SHARD_SIZES --shard-size" "BATCH_SIZES --batch-size")
variants() {
    local label=$1 results=$2 variant name option value
    shift 2
    for variant in "${VARIANTS[@]}"; do
        read -r name option <<< "$variant"
        for value in ${!name:-}; do
            step "$label, fused HF route, ${option#--} $value"
            throughput "${option#--}-$value" "$results" "$@" --generator fused "$option" "$value" \
                || echo "${option#--} $value FAILED"
        done
    done
}

# The paper-style peer beside the engine: its JSON saved in $1, the headline printed; where the peer's vLLM route
# fails, the run is made again with HF generate for its y-hat (the JSON says which was used).
peer() {
    local results=$1 saved
    shift
    if ! "$PY" benchmarks/peer_pipeline.py "$@" --save --results-dir "$results" > "$LOGS/peer.log" 2>&1; then
        tail -30 "$LOGS/peer.log"
        echo "peer with y-hat from vLLM FAILED; again with HF generate"
        "$PY" benchmarks/peer_pipeline.py "$@" --paper-yhat hf --save --results-dir "$results" > "$LOGS/peer.log" 2>&1 \
            || { tail -30 "$LOGS/peer.log"; return 1; }
    fi
    saved=$(sed -n 's/^saved //p' "$LOGS/peer.log")
    "$PY" - "$saved" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
e, p, a = r["engine"], r["paper_style"], r["agreement"]
print(f"{sys.argv[1]}: {r['pool']['candidates']} candidates on {r['device']['name']}")
print(f"  engine {e['candidates_per_s']} cand/s (batch {e['batch_size']}); paper-style {p['candidates_per_s']} cand/s "
      f"(y-hat by {p['yhat']}, batch {p['batch_size']} of {list(p['seconds_per_candidate_tried'])}): {r['ratio_engine_over_paper']}x")
print(f"  CAP z Spearman {a['spearman_cap_z']}; rows with another y-hat {a['rows_with_other_yhat']} of {a['candidates_both_scored']}")
PY
}

if [[ "$MODE" == dry ]]; then
    # The 8B-shaped runs need a GPU; the tiny Llama runs the same script end to end on CPU (JSON in $LOGS).
    step "gpu_throughput.py --tiny, vllm route (vLLM's CPU build where $PY has it)"
    if "$PY" -c 'import sys; from capsel.cap_engine.vllm_generation import vllm_build; sys.exit(vllm_build() != "cpu")'; then
        throughput tiny-vllm "$LOGS" --tiny --threads 1 --n-candidates 128 --generator vllm --enforce-eager
    else
        echo "skipped: $PY has no vLLM CPU build (make setup-vllm)"
    fi
    step "gpu_throughput.py --tiny, fused HF route"
    throughput tiny-fused "$LOGS" --tiny --threads 1 --n-candidates 128 --generator fused
    variants "gpu_throughput.py --tiny" "$LOGS" --tiny --threads 1 --n-candidates 128
    step "peer_pipeline.py --tiny: the paper-style pipeline beside the engine"
    peer "$LOGS" --tiny --threads 1 --n-candidates 64 || echo "peer FAILED"
else
    step "gpu_throughput.py, Llama-3-8B shape, vllm route, $N_CANDIDATES candidates"
    if "$PY" -c 'import vllm' 2>/dev/null; then
        throughput vllm "$RESULTS_DIR" --n-candidates "$N_CANDIDATES" --generator vllm
    else
        echo "skipped: $PY has no vLLM"
    fi
    step "gpu_throughput.py, Llama-3-8B shape, fused HF route, $N_CANDIDATES candidates"
    throughput fused "$RESULTS_DIR" --n-candidates "$N_CANDIDATES" --generator fused
    if [[ "${PEER:-1}" == 1 ]]; then
        step "peer_pipeline.py: the paper-style pipeline beside the engine, Llama-3-8B shape, ${N_PEER:-1024} candidates"
        peer "$RESULTS_DIR" --n-candidates "${N_PEER:-1024}" || echo "peer FAILED"
    fi
    variants "gpu_throughput.py, Llama-3-8B shape, $N_CANDIDATES candidates" "$RESULTS_DIR" --n-candidates "$N_CANDIDATES"
    if [[ -n "${BEFORE_TREE:-}" ]]; then
        step "the same run on the earlier tree in $BEFORE_TREE (${BEFORE_LABEL:-before})"
        before_site=$(mktemp -d)
        "$PY" -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir --target "$before_site" \
            "$BEFORE_TREE"
        before_results=$(mktemp -d)
        # Only the earlier build on the path: this tree's capsel must not shadow it.
        PYTHONPATH="$before_site:$WHEEL_SITE" PY_SCRIPT="$BEFORE_TREE/benchmarks/gpu_throughput.py" \
            throughput before "$before_results" --n-candidates "$N_CANDIDATES" --generator fused
        for file in "$before_results"/*.json; do
            cp "$file" "$RESULTS_DIR/$(basename "$file" .json)-${BEFORE_LABEL:-before}.json"
        done
    fi
    if [[ "${PROFILE:-0}" == 1 ]]; then
        step "gpu_throughput.py --profile, fused HF route, 1024 candidates"
        throughput profile "$RESULTS_DIR" --n-candidates 1024 --generator fused --profile
    fi
    for entry in ${DECODE_PROFILE:-}; do
        # "graphed+compiled" or "graphed+eager": the layout, with the norms and MLPs compiled or not (without a
        # suffix, as the engine chooses)
        layout=${entry%+*}
        compiled=()
        [[ "$entry" == *+compiled ]] && compiled=(--compile-norms-and-mlps on)
        [[ "$entry" == *+eager ]] && compiled=(--compile-norms-and-mlps off)
        step "decode_profile.py, Llama-3-8B shape, KV layout $entry"
        "$PY" benchmarks/decode_profile.py --kv "$layout" "${compiled[@]}" \
            --out "$RESULTS_DIR/decode_profile-$(date +%F)-kv-$entry.json" > "$LOGS/decode-$entry.log" 2>&1 \
            || echo "decode_profile.py --kv $entry FAILED"
        tail -25 "$LOGS/decode-$entry.log"
    done
    if [[ "${VLM:-0}" == 1 ]]; then
        for layout in ${VLM_KV_LAYOUTS:-auto}; do
            step "multimodal_throughput.py, Llava-1.5-7B shape, 128 candidates at batch 32, KV layout $layout"
            "$PY" benchmarks/multimodal_throughput.py --n-candidates 128 --batch-size 32 --kv-layout "$layout" --save \
                --results-dir "$RESULTS_DIR" > "$LOGS/vlm-$layout.log" 2>&1 || true
            cp "$LOGS/vlm-$layout.log" "$RESULTS_DIR/multimodal_throughput-$(date +%F)-kv-$layout.log"
            tail -40 "$LOGS/vlm-$layout.log"
        done
    fi
    echo "goal: 120 candidates/s end to end; logs in $LOGS"
fi
step "done"
