"""Per-example LoRA gradients of the response-only loss, sketched block by block as backward produces them.

The paper's LESS configuration attaches fresh LoRA adapters (no warmup training). LoRA's B starts
at zero, so the gradient with respect to every A is exactly zero and only the B blocks carry
signal; the A blocks are still sketched, as the paper takes "all trainable LoRA parameters".
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Sequence

import torch
from torch import nn

from capsel.errors import CapselError
from capsel.methods.less.countsketch import CountSketch
from capsel.models.loading import LoadedModel
from capsel.scorers.response_loss import response_token_nll

# peft draws the adapters' init from torch's global generator: two threads attaching at once (the
# local shard runner) would interleave their draws and get different adapters, so attaching is serial.
_INIT_LOCK = threading.Lock()


@dataclass(frozen=True)
class LoraSpec:
    """The adapters whose gradients form the feature."""

    rank: int
    alpha: float
    dropout: float
    target_modules: tuple[str, ...]
    init_seed: int


def attach_lora(model: nn.Module, spec: LoraSpec) -> list[tuple[str, nn.Parameter]]:
    """Inject LoRA adapters into `model` in place (peft), freeze everything else; return the LoRA parameters.

    The adapters' random init runs under `torch.manual_seed(spec.init_seed)` in a forked RNG, so the
    feature is the same in every process and the caller's random state is untouched.
    """
    from peft import LoraConfig, inject_adapter_in_model

    present = {name.rsplit(".", 1)[-1] for name, _ in model.named_modules()}
    if not present.intersection(spec.target_modules):
        raise CapselError(
            f"LESS puts LoRA on {', '.join(spec.target_modules)}, but {type(model).__name__} has no such "
            "modules (its attention projections are named differently)"
        )
    config = LoraConfig(
        r=spec.rank, lora_alpha=spec.alpha,  # type: ignore[arg-type]  # peft scales by alpha / r as a float
        lora_dropout=spec.dropout, target_modules=list(spec.target_modules),
        bias="none",
    )
    # peft initialises the adapters on the CPU and then moves them next to their base layer
    with _INIT_LOCK, torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(spec.init_seed)
        inject_adapter_in_model(config, model)
    for name, parameter in model.named_parameters():
        parameter.requires_grad_("lora_" in name)
    lora = [(name, parameter) for name, parameter in model.named_parameters() if parameter.requires_grad]
    if not lora:
        raise CapselError("peft attached no LoRA parameters: nothing to take gradients of")
    return lora


def response_loss(loaded: LoadedModel, prompt_ids: Sequence[int], response_ids: Sequence[int]) -> torch.Tensor:
    """Mean NLL of the response tokens after the prompt (prompt tokens masked): the causal-LM loss LESS uses."""
    return response_token_nll(loaded, [prompt_ids], [response_ids])[0].double().mean()


class GradientSketcher:
    """Sketches the gradient of a loss w.r.t. the LoRA parameters into a `dim`-vector during backward.

    A post-accumulate-grad hook on each parameter adds its block to the sketch and frees the block,
    so at no point does the full gradient exist as one vector.
    """

    def __init__(self, loaded: LoadedModel, parameters: list[tuple[str, nn.Parameter]], sketch: CountSketch):
        self.loaded = loaded
        self.sketch = sketch
        self.n_parameters = sum(parameter.numel() for _, parameter in parameters)
        device = parameters[0][1].device
        self._accumulator = torch.zeros(sketch.dim, dtype=torch.float32, device=device)
        for name, parameter in parameters:
            parameter.register_post_accumulate_grad_hook(self._hook(name))

    def _hook(self, name: str):
        def sketch_block(parameter: nn.Parameter) -> None:
            assert parameter.grad is not None  # the hook runs after accumulation, so the gradient exists
            self.sketch.add(self._accumulator, name, parameter.grad)
            parameter.grad = None

        return sketch_block

    def sketched(self, prompt_ids: Sequence[int], response_ids: Sequence[int]) -> tuple[float, torch.Tensor]:
        """(loss, S · ∇loss) for one example, the sketch unnormalised, on the CPU."""
        self._accumulator.zero_()
        with torch.enable_grad():
            loss = response_loss(self.loaded, prompt_ids, response_ids)
            loss.backward()
        return float(loss.detach()), self._accumulator.detach().cpu().clone()
