"""A model's norms and MLPs compiled in place (torch.compile), for LoadedModel.compile_norms_and_mlps.

On an H100 an 8B batch of 256 spent 0.74 s of device time in unfused elementwise kernels against 1.43 s in its
matrix products (benchmarks/README.md, 2026-11-27), most of them an RMSNorm's (up-cast, square, mean, rsqrt, two
multiplies, down-cast: a pass over the activations each) and the MLP's activation times its up-projection.
Compiled, a norm is one kernel and the activation is fused with its product; the projections stay cuBLAS calls.

Only these modules are compiled. Attention writes the KV buffers in place, and a compiled graph that writes them
copies them: compiling the whole greedy step made each step twice as slow on the H100.

Modules are picked by class name, so every family's norm and MLP is compiled as that family writes it (Gemma's
1 + weight, Qwen3's query and key norms, a vision tower's MLP). They compile with dynamic sizes: one graph per
class for the prompt and the response forwards, one more for a one-token step, shared by every layer, since
torch.compile passes a module's weights to its graph as inputs.

They are the default on CUDA (`compiles`): on an H100 the 8B shape scored 124.36 candidates/s compiled against
109.51 eager in one call, for 10.8 s of compile once per process (benchmarks/README.md, 2026-11-27, third
session). Not on CPU, where none was measured to pay, and not for a vision-language model, whose tower sees
pictures of many sizes and whose compiled speed no GPU has measured.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
from typing import TYPE_CHECKING

import torch

from capsel.cap_engine.per_model import PerModel

if TYPE_CHECKING:
    from capsel.models.loading import LoadedModel

logger = logging.getLogger(__name__)

COMPILED_CLASS_SUFFIXES = ("RMSNorm", "MLP")


class _Compiled:
    done = False


_COMPILED = PerModel(_Compiled)


def compiles(loaded: LoadedModel) -> bool:
    """Whether `loaded` runs its norms and MLPs compiled: its `compile_norms_and_mlps`, or when that is None, for a
    text model on CUDA where inductor can build its kernels, unless the user set TORCH_COMPILE_DISABLE=1."""
    if loaded.compile_norms_and_mlps is not None:
        return loaded.compile_norms_and_mlps
    return (loaded.input_device.type == "cuda" and loaded.processor is None and not torch._dynamo.config.disable
            and gpu_kernels_build())


@functools.cache
def gpu_kernels_build() -> bool:
    """Whether triton is installed for this GPU and finds a C compiler, which it builds its kernel launchers with:
    without one, the first compiled call would fail in the middle of a run."""
    from torch.utils._triton import has_triton

    return has_triton() and any(shutil.which(cc) for cc in (os.environ.get("CC", ""), "gcc", "clang") if cc)


def compile_norms_and_mlps(model: torch.nn.Module) -> None:
    """Compile `model`'s norms and MLPs in place, the first time it is asked for `model`; they stay compiled for
    every later call, whoever makes it."""
    compiled = _COMPILED.of(model)
    if compiled.done:
        return
    logger.info("compiling the model's norms and MLPs (once per process)")
    _cache_per_cpu_capability()
    if torch.backends.cpu.get_cpu_capability() == "DEFAULT":
        # ATEN_CPU_CAPABILITY=default builds ATen's vector headers as scalar code, which inductor's vectorized C++
        # for the CPU then fails to compile against ("'at::vec' has not been declared"): scalar kernels instead
        import torch._inductor.config as inductor

        inductor.cpp.simdlen = 1
    for module in model.modules():
        if type(module).__name__.endswith(COMPILED_CLASS_SUFFIXES):
            module.compile(dynamic=True)
    compiled.done = True


def _cache_per_cpu_capability() -> None:
    """Keep inductor's compiled kernels apart per ATen CPU capability. inductor's cache key leaves the capability
    out, so a kernel compiled under ATEN_CPU_CAPABILITY=default was loaded by a later process at the machine's own
    capability (AVX2 on the AVX-512 Xeon where it was seen), which aborted in the model's forward. A folder the
    user named is left as it is, unless it is inductor's default one, which inductor itself writes back into the
    variable once it has compiled anything."""
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    named = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if named is None or os.path.abspath(named) == os.path.abspath(default_cache_dir()):
        capability = torch.backends.cpu.get_cpu_capability().lower()
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = f"{default_cache_dir()}-{capability}"
