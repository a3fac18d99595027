#!/usr/bin/env bash
# Builds .device-carry/ on a machine with the package registry, for a lent GPU machine that has none: its image
# (2026-11-27) is Python 3.12 with CUDA torch 2.11, transformers 5.17, tokenizers 0.23.2, huggingface_hub 1.33,
# accelerate, torchvision and nvidia-ml-py, and lacks DuckDB and pydantic. Run from the repository root:
#
#   bash benchmarks/device_carry.sh [BEFORE]     # BEFORE: the commit to measure against (default HEAD)
#
# It writes
#   .device-carry/wheels  the wheels capsel needs beyond the image, and transformers, all at the versions .venv
#                         has, so the GPU runs the release a fresh install gets (5.24 packs GQA for a one-token
#                         step; the image's tokenizers, safetensors, regex and huggingface_hub meet its floors)
#   .device-carry/old     the BEFORE tree (git archive, without the demo model and the GSM8K copy: 15 MB the
#                         benchmarks do not read), for gpu_check.sh's BEFORE_TREE
# and prints the sizes: the working tree and the carried paths together must stay under 64 MiB per call
# (2026-11-27: 21 MB of tracked files, 41 MB of wheels, 4 MB of old tree).
# Then, on the device (carry [".device-carry"]), the next lease's command (benchmarks/README.md, "The next lease"
# under the 2026-11-27 third-session section): the compiled default, eager, the compiled run again in a second
# process (the inductor cache warm: its start-up), and the Llava shape
#   set -o pipefail; GPU_PY=python3 WHEELS=.device-carry/wheels COMPILED="off on" VLM=1 \
#       RESULTS_DIR=$OUT/results N_CANDIDATES=8192 \
#       timeout 530 bash benchmarks/gpu_check.sh 2>&1 | tee $OUT/gpu_check.log
#   tar -C $OUT -czf $OUT/results.tgz results && rm -rf $OUT/results     # only 8 files come back from $OUT
# (BEFORE_TREE=.device-carry/old BEFORE_LABEL=engine-<commit> adds the BEFORE tree's run to the same call, for a
# change of the GPU's default path; cf32ff2 is the growing cache's engine before the pooled buffers.)
set -euo pipefail
cd "$(dirname "$0")/.."
BEFORE=${1:-HEAD}
CARRY=.device-carry
PY=${PY:-.venv/bin/python}
PLATFORM=(--only-binary=:all: --implementation cp --python-version 3.12 --platform manylinux_2_17_x86_64
          --platform manylinux2014_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_28_x86_64)

pinned() {  # the versions .venv has, as name==version
    "$PY" -m pip freeze 2>/dev/null | grep -iE "^($(IFS='|'; echo "$*"))==" | sed 's/ @ .*//'
}
download() {  # folder, then requirements
    local folder=$1
    shift
    "$PY" -m pip download --quiet --no-deps --dest "$folder" "${PLATFORM[@]}" "$@" 2>&1 | grep -v '^WARNING: Location' || true
}

rm -rf "$CARRY/wheels" "$CARRY/old"
mkdir -p "$CARRY/wheels" "$CARRY/old"
mapfile -t WHEELS < <(pinned duckdb orjson pydantic pydantic_core pydantic-settings python-dotenv typing_extensions \
                             typing-inspection annotated-types dill transformers)
download "$CARRY/wheels" "${WHEELS[@]}"
git archive "$BEFORE" pyproject.toml setup.py capsel sql flows tasks benchmarks README.md \
    ':(exclude)capsel/models/demo/model.safetensors' ':(exclude)capsel/data/real/gsm8k_train.jsonl' \
    | tar -x -C "$CARRY/old"
echo "wheels: ${WHEELS[*]}"
echo "before: $(git rev-parse --short "$BEFORE")"
du -sh "$CARRY/wheels" "$CARRY/old"
echo "tracked files: $(git ls-files -z | du -cb --files0-from=- | tail -1 | cut -f1) bytes"
