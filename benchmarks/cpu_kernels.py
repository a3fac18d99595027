"""The CPU products a scoring run spends its time in, each way torch can run them: ms per call, and whether each
gives `nn.Linear`'s bits.

    .venv/bin/python benchmarks/cpu_kernels.py --model gemma3-270m --threads 2 --batch-size 32
    .venv/bin/python benchmarks/cpu_kernels.py --model gemma3-270m --threads 2 --batch-size 32 --engine-rows 64 \
        --other-batch-size 16

For the output head and each projection shape of one decoder block, at a greedy step's row count (the batch) and a
response branch's (batch x R):
- `linear`: `F.linear`, which `nn.Linear` runs (MKL's sgemm);
- `slices`: the head as slices of the vocabulary (capsel.cap_engine.vocabulary_slices.in_slices), the head only;
- `onednn_packed`: oneDNN with the weight reordered once beforehand (what torch.compile's CPU weight freezing
  runs), where this torch has it.

A way whose bits differ from `linear`'s changes logits in their last bits, and so may change a greedy argmax; the
engine runs only ways that agree (sliced_head checks each shape). `--engine-rows N` also scores the first N rows of
the bundled real pool with the engine as it is and with every linear layer of the model (head included) on oneDNN,
alternated round by round: the seconds, the rows whose ŷ changed, and how far D_ℓ and PPL moved;
`--other-batch-size B` also scores those rows as the engine is at batch B, which moves the bits the same way a run
that batches other rows together does. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

import orjson
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from run_agreement import movement  # noqa: E402
from score_throughput import real_pool, timed  # noqa: E402

from capsel.cap_engine.config import ScoringConfig  # noqa: E402
from capsel.cap_engine.engine import ScoringEngine  # noqa: E402
from capsel.cap_engine.vocabulary_slices import in_slices  # noqa: E402
from capsel.models.loading import describe_model, load_model  # noqa: E402

# Enough calls for a stable median of a short product, and a floor of seconds for a long one.
SHORT_CALLS, LONG_CALLS, LONG_MS = 30, 3, 500


def weights(model: torch.nn.Module, block: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The head's weight and one weight of each distinct shape among the block's linear layers, by module name."""
    found = {"head": model.get_output_embeddings().weight.detach()}
    shapes = set()
    for name, module in block.named_modules():
        if isinstance(module, torch.nn.Linear) and tuple(module.weight.shape) not in shapes:
            shapes.add(tuple(module.weight.shape))
            found[name] = module.weight.detach()
    return found


def onednn_linear(
    weight: torch.Tensor, bias: torch.Tensor | None = None
) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """oneDNN's linear with `weight` reordered once, or None where this torch lacks it."""
    ops = torch.ops.mkldnn
    if not torch.backends.mkldnn.is_available() or not hasattr(ops, "_linear_pointwise"):
        return None
    packed = ops._reorder_linear_weight(weight, None)
    return lambda rows: ops._linear_pointwise(rows, packed, bias, "none", [], "")


@contextlib.contextmanager
def onednn_linears(model: torch.nn.Module) -> Iterator[None]:
    """Within: every nn.Linear of `model` computes on oneDNN; each module's own forward comes back on exit."""
    saved = {}
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            saved[module] = module.__dict__.get("forward")
            module.forward = onednn_linear(module.weight.detach(), module.bias)  # type: ignore[method-assign]
    try:
        yield
    finally:
        for module, forward in saved.items():
            if forward is None:
                del module.forward
            else:
                module.forward = forward  # type: ignore[method-assign]


def engine_with_onednn(loaded, batch_size: int, n_rows: int, rounds: int, other_batch_size: int | None) -> dict:
    """The engine on real rows as it is and with its linear layers on oneDNN, alternated; how the results moved.
    With `other_batch_size`, also how they move when the engine as it is batches the same rows otherwise."""
    if onednn_linear(loaded.model.get_output_embeddings().weight.detach()) is None:
        raise SystemExit("--engine-rows needs oneDNN's linear, which this torch build lacks")
    config = ScoringConfig(prompt_format="auto")
    engine = ScoringEngine(loaded, config, batch_size=batch_size)
    inputs = engine.prepare(real_pool(n_rows))

    def on_onednn():
        with onednn_linears(loaded.model):
            return engine.generate_and_score(inputs)

    ways = {"linear": lambda: engine.generate_and_score(inputs), "onednn": on_onednn}
    for run in ways.values():
        run()  # warm: the sliced head's shape checks, oneDNN's first calls
    seconds: dict[str, list[float]] = {way: [] for way in ways}
    outputs = {}
    for index in range(rounds):
        for way in list(ways)[index % 2:] + list(ways)[:index % 2]:
            outputs[way], elapsed = timed(ways[way])
            seconds[way].append(round(elapsed, 2))
    report = {
        "rows": len(inputs),
        "seconds_per_round": seconds,
        "candidates_per_s_median": {way: round(len(inputs) / statistics.median(times), 3)
                                    for way, times in seconds.items()},
        **movement(outputs["linear"], outputs["onednn"]),
    }
    if other_batch_size:
        rebatched = ScoringEngine(loaded, config, batch_size=other_batch_size).generate_and_score(inputs)
        report[f"linear_at_batch_{other_batch_size}"] = movement(outputs["linear"], rebatched)
    return report


def median_ms(function: Callable[[], torch.Tensor]) -> float:
    """The median wall time of repeated calls, after one untimed call."""
    start = time.perf_counter()
    function()
    first_ms = (time.perf_counter() - start) * 1000
    times = []
    for _ in range(LONG_CALLS if first_ms > LONG_MS else SHORT_CALLS):
        start = time.perf_counter()
        function()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def measured(name: str, weight: torch.Tensor, rows: int) -> dict:
    """Each way's ms per call on `rows` random rows, and whether its bits equal F.linear's."""
    torch.manual_seed(0)
    hidden = torch.randn(rows, weight.shape[1])
    ways: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {"linear": lambda x: F.linear(x, weight)}
    if name == "head":
        ways["slices"] = lambda x: in_slices(x, weight)
    onednn = onednn_linear(weight)
    if onednn is not None:
        ways["onednn_packed"] = onednn
    outputs = {way: function(hidden) for way, function in ways.items()}
    expected = outputs["linear"]
    return {
        "product": name, "weight": list(weight.shape), "rows": rows,
        "ms": {way: round(median_ms(lambda: function(hidden)), 2) for way, function in ways.items()},
        "same_bits": {way: torch.equal(output, expected) for way, output in outputs.items() if way != "linear"},
        "max_abs_diff": {way: float((output - expected).abs().max()) for way, output in outputs.items()
                         if way != "linear"},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="installed model name or folder")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--batch-size", type=int, default=32, help="rows of a greedy step")
    parser.add_argument("--engine-rows", type=int, default=0,
                        help="also score this many real rows with the engine as it is and on oneDNN (0: not)")
    parser.add_argument("--engine-rounds", type=int, default=2, help="timed rounds of each, alternated")
    parser.add_argument("--other-batch-size", type=int, default=None,
                        help="also score the engine's rows, as it is, at this batch size, and compare (not timed)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    info = describe_model(args.model, dtype="float32", device="cpu")
    loaded = load_model(info)
    response_rows = args.batch_size * ScoringConfig().horizon
    products = []
    with torch.inference_mode():
        for name, weight in weights(loaded.model, loaded.blocks[0]).items():
            for rows in (args.batch_size, response_rows):
                products.append(measured(name, weight, rows))
                print(f"{name} {list(weight.shape)} x {rows} rows: {products[-1]['ms']}", file=sys.stderr)
    report = {
        "command": " ".join(["python", *sys.argv]),
        "machine": {"cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                    "load_average_1m_at_end": os.getloadavg()[0], "platform": platform.platform(),
                    "torch": torch.__version__},
        "model": {"name": args.model, "architecture": info.architecture, "batch_size": args.batch_size},
        "products": products,
    }
    if args.engine_rows:
        report["engine"] = engine_with_onednn(loaded, args.batch_size, args.engine_rows, args.engine_rounds,
                                              args.other_batch_size)
    print(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())


if __name__ == "__main__":
    main()
