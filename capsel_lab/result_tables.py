"""The lab's and the benchmarks' tables in the READMEs and docs/lab.md, rendered from the committed result files
under docs/lab/ and benchmarks/results/ and nothing else.

A table sits between `<!-- table: NAME FILE... -->` and `<!-- /table -->`; NAME picks the renderer, the files
(relative to the repository) are its inputs (a JSON Lines file: its last line, a run's summary, with the lines
before it under "lines"). `capsel lab tables` rewrites every such block; `--check` (and a test) fails where a
README differs from what its files render.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Callable

from capsel_lab.benchmark_tables import BENCHMARK_RENDERERS
from capsel_lab.markdown_table import table

_REPOSITORY = Path(__file__).resolve().parents[1]
# the notes split from the two READMEs by topic hold tables too: every file of those folders, so a new one is checked
DOCUMENTS = ("README.md", "capsel_lab/README.md", "docs/lab.md", "benchmarks/README.md",
             *sorted(path.relative_to(_REPOSITORY).as_posix() for folder in ("benchmarks/notes", "capsel_lab/notes")
                     for path in (_REPOSITORY / folder).glob("*.md")))
BLOCK = re.compile(r"(<!-- table: (?P<name>[a-z0-9-]+) (?P<files>[^>]+?) -->\n)(?P<body>.*?)(<!-- /table -->)",
                   re.DOTALL)
MODEL_NAMES = {"smollm2-135m-instruct": "SmolLM2-135M-Instruct", "gemma3-270m": "Gemma 3 270M (base)",
               "demo": "demo model"}


def _ci(ci95) -> str:
    return "" if ci95 is None else f"[{ci95[0]:+.4f}, {ci95[1]:+.4f}]"


def _model(summary: dict) -> str:
    name = summary["spec"]["model"]
    return MODEL_NAMES.get(name, name)


def real_sft_methods(summaries: list[dict]) -> str:
    """Held-out loss per method over pools, with rows, junk and response tokens, one block of rows per run."""
    rows = []
    for summary in summaries:
        spec = summary["spec"]
        arm = f"{spec['junk_share']:.0%} junk"
        for method in summary["methods"]:
            counts = [f"{method[key]:.1f}" if key in method else "" for key in
                      ("n_members_mean", "n_junk_mean", "response_tokens_mean")]
            rows.append([_model(summary), arm, method["method"], str(method["n_pools"]), *counts,
                         f"{method['loss_mean']:.4f} ± {method['loss_std']:.4f}"])
    return table(["model", "pools", "method", "n", "rows", "junk", "response tokens",
                   "held-out loss, mean ± std over pools"], rows)


def real_sft_pools(summaries: list[dict]) -> str:
    """Each pool's paired deltas (method − against, 95% paired bootstrap CI) and its verdict."""
    rows = []
    for summary in summaries:
        arm = f"{summary['spec']['junk_share']:.0%} junk"
        for comparison in summary["comparisons"]:
            for pool in comparison["pools"]:
                rows.append([_model(summary), arm, f"{comparison['method']} − {comparison['against']}",
                             str(pool["pool_seed"]), f"{pool['delta']:+.4f}", _ci(pool["ci95"]), pool["verdict"]])
    return table(["model", "pools", "delta", "pool", "value", "95% CI (paired bootstrap)", "verdict"], rows)


def real_sft_across(summaries: list[dict]) -> str:
    """Across pools: how often the method's model was better or worse, the mean delta, sign test and t-test."""
    rows = []
    for summary in summaries:
        arm = f"{summary['spec']['junk_share']:.0%} junk"
        for comparison in summary["comparisons"]:
            n = comparison["n_pools"]
            t_p = "" if comparison["t_test_p"] is None else f"{comparison['t_test_p']:.3f}"
            rows.append([_model(summary), arm, f"{comparison['method']} − {comparison['against']}", str(n),
                         f"{comparison['sign_test']['n_lower']} of {n}", f"{comparison['n_better']} / "
                         f"{comparison['n_worse']}", f"{comparison['mean_delta']:+.4f}",
                         f"{comparison['sign_test']['p']:.3f}", t_p])
    return table(["model", "pools", "delta", "n", "lower loss in", "better / worse (CI excludes 0)", "mean delta",
                   "sign test p", "paired t p"], rows)


def real_sft_null(summaries: list[dict]) -> str:
    """Where CAP's model ranks among random subsets of one pool, and each run's wall time."""
    rows = []
    for summary in summaries:
        null = summary["null"]
        arm = f"{summary['spec']['junk_share']:.0%} junk"
        rank = (f"{null['rank']} of {null['n_random'] + 1} (p = {null['p']:.2f})", f"{null['loss']:.4f}",
                f"{null['random_median']:.4f} ({null['random_losses'][0]:.4f}–{null['random_losses'][-1]:.4f})"
                ) if null else ("not drawn (--null-draws 0)", "", "")
        rows.append([_model(summary), arm, str(summary["spec"]["pools"]), *rank, _lab_time(summary)])
    return table(["model", "pools", "n", "CAP among random subsets of pool 0", "CAP's loss",
                   "random: median (range)", "time"], rows)


def _lab_time(summary: dict) -> str:
    """The pools' recorded work (each pool's runs summed from its database) where the run stored it; before that,
    the lab runs' wall time, which misses every run killed before it wrote its summary."""
    seconds = [pool["recorded_s"] for pool in summary["pools"] if "recorded_s" in pool]
    if len(seconds) < len(summary["pools"]):
        return f"{summary['wall_s'] / 60:.0f} min wall ({len(summary['runs_wall_s'])} run(s))"
    middle = statistics.median(seconds)
    return f"{sum(seconds) / 3600:.1f} h recorded; {middle / 60:.0f} min a pool (median)"


def _noise_label(summary: dict) -> tuple[str, str]:
    return MODEL_NAMES.get(summary["model"], summary["model"]), summary["aggregate"]["prompt_format"]


def noise_ranks(summaries: list[dict]) -> str:
    """Junk rank per method and junk kind (median percentile per seed, share below p5 / above p95)."""
    rows = []
    for summary in summaries:
        model, prompt = _noise_label(summary)
        for key, rank in summary["aggregate"]["ranks"].items():
            method, kind = key.split("/")
            median = rank["median"]
            seeds = "/".join(f"{value:.1f}" for value in median["per_seed"])
            rows.append([model, prompt, NOISE_METHODS[method], f"{kind} ({rank['n_junk']})",
                         f"{median['mean']:.1f} [{seeds}]", f"{rank['below_p5']['mean']:.0%}",
                         f"{rank['above_p95']['mean']:.0%}"])
    return table(["model", "prompt", "method", "junk kind", "median pct (seeds)", "below clean p5",
                   "above clean p95"], rows)


NOISE_METHODS = {"ppl": "PPL", "cap": "CAP z", "cap_guard": "CAP z, PPL guard 95"}


def noise_selections(summaries: list[dict]) -> str:
    """Junk in a 10% selection by each method (over the seeds), and the clean rows the engine excluded."""
    rows = []
    for summary in summaries:
        model, prompt = _noise_label(summary)
        aggregate = summary["aggregate"]
        cells = [_selected(aggregate["selections"][method]) for method in ("cap", "cap_guard", "ppl", "random")]
        reasons = ", ".join(f"{reason} {count}" for reason, count in sorted(aggregate["excluded"].items()))
        rows.append([model, prompt, *cells, f"{aggregate['clean_excluded']['mean']:.1%}", reasons,
                     f"{aggregate['guard']['clean']['mean']:.1%}"])
    return table(["model", "prompt", "CAP", "CAP + guard", "PPL", "random", "clean excluded", "excluded reasons",
                   "guard holds back clean"], rows)


def _selected(entry: dict) -> str:
    kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(entry["junk_by_kind"].items()) if count)
    return f"{entry['n_junk']} of {entry['n_members']} ({kinds or '-'})"


def _pct(value: float) -> str:
    return "100" if value == 100 else f"{value:.1f}"


def noise_seeds(seeds: list[dict]) -> str:
    """One row per seed of `capsel lab noise` on the lab model: where PPL and CAP rank the junk, and by label."""
    rows = []
    for run in seeds:
        ppl, cap, kinds, labels = run["pooled"]["ppl"], run["pooled"]["cap"], run["per_junk_kind"], run["labels"]
        rows.append([str(run["spec"]["seed"]), f"{_pct(ppl['median'])} / {_pct(ppl['min'])}, {ppl['above_all']:.0%}",
                     f"{_pct(cap['median'])} / {_pct(cap['min'])} / {_pct(cap['max'])}",
                     " / ".join(f"{cap[key]:.0%}" for key in ("below_p1", "below_p5", "below_p10")),
                     f"{kinds['salad']['cap']['median']:.1f} / {kinds['shuffled']['cap']['median']:.1f}",
                     " / ".join(f"{labels[label]['mean_z']:+.2f}" for label in ("known", "learnable", "junk")),
                     f"{run['auc_learnable_over_known']:.2f}"])
    return table(["seed", "PPL: junk pct median / min, junk above all clean", "CAP: junk pct median / min / max",
                   "CAP: junk below clean p1 / p5 / p10", "CAP median: salad / shuffled",
                   "mean CAP z known / learnable / junk", "AUC learnable > known"], rows)


def split_sweep(sweeps: list[dict]) -> str:
    """Per sweep: the split chosen on one seed and the paper's, each seed's junk median percentile / share below
    every clean row (the other seeds report the choice, held out)."""
    rows = []
    for sweep in sweeps:
        chosen, seed = sweep["chosen_late"], str(sweep["chosen_on_seed"])
        seeds = [sweep["chosen_on_seed"], *sweep["reported_seeds"]]
        for index, (late, label) in enumerate(((chosen, f"{chosen} (chosen)"), ("0.66", "0.66 (paper)"))):
            measured = {entry["seed"]: entry for entry in sweep["per_seed"][seed] if entry["late"] == late}
            measured.update({entry["seed"]: entry for entry in sweep["held_out"][late]})
            first, last = measured[seeds[0]]["late_layers"]
            blocks = f"{first}" if first == last else f"{first}-{last}"
            name = MODEL_NAMES.get(sweep["model"], sweep["model"] or "demo model")
            rows.append([f"{name}, {sweep['prompt_format']} ({sweep['n_blocks']})" if index == 0 else "", label, blocks,
                         *(f"{measured[s]['median_pct']:.1f} / {measured[s]['below_all']:.0%}" for s in seeds)])
    seeds = [sweeps[0]["chosen_on_seed"], *sweeps[0]["reported_seeds"]]
    return table(["model, prompt (blocks)", "late", "blocks", f"seed {seeds[0]} (chooses)",
                   *(f"seed {s}" for s in seeds[1:])], rows)


def noise_summary(summaries: list[dict]) -> str:
    """Per model and prompt: the junk's median percentile (per seed) and its share below p5 / above p95 under PPL,
    CAP (all junk, per kind) and what the PPL guard holds back."""
    rows = []
    for summary in summaries:
        model, prompt = _noise_label(summary)
        ranks = summary["aggregate"]["ranks"]

        def cell(key: str) -> str:
            rank = ranks[key]
            seeds = "/".join(f"{value:.1f}" for value in rank["median"]["per_seed"])
            return (f"{rank['median']['mean']:.1f} [{seeds}]; {rank['below_p5']['mean']:.0%} below p5, "
                    f"{rank['above_p95']['mean']:.0%} above p95")
        guard = summary["aggregate"]["guard"]
        rows.append([model, prompt, cell("ppl/all junk"), cell("cap/all junk"), cell("cap/salad"), cell("cap/shuffled"),
                     f"{guard['junk']['mean']:.0%} of junk, {guard['clean']['mean']:.1%} of clean"])
    return table(["model", "prompt", "PPL (high first)", "CAP z: all junk", "CAP z: token salad",
                   "CAP z: shuffled characters", "held back by the PPL guard (95)"], rows)


def real_pool_counts(manifests: list[dict]) -> str:
    """The bundled real pool: clean rows and junk of each kind per domain."""
    sources = {"math": "math (GSM8K train)", "code": "code (HumanEval)"}
    rows = [[sources.get(domain, domain), str(counts["clean"]), str(counts["salad"]), str(counts["shuffled"]),
             str(sum(counts.values()))] for domain, counts in manifests[0]["counts"].items()]
    return table(["domain", "clean", "junk: salad", "junk: shuffled", "records"], rows)


def world_sft(summaries: list[dict]) -> str:
    """`capsel lab sft` on the lab world: per budget and method, the set's make-up and held-out accuracy over seeds."""
    def cell(row: dict, metric: str, digits: int) -> str:
        mean, std = row[f"{metric}_mean"], row[f"{metric}_std"]
        if mean is None:
            return ""
        return f"{mean:.{digits}f}" if row["n_seeds"] < 2 else f"{mean:.{digits}f} ± {std:.{digits}f}"

    labels = {"cap": "CAP", "random": "random"}
    rows = [[row["budget"], labels.get(row["method"], row["method"]), str(row["n_seeds"]),
             f"{row['n_train_mean']:.0f}", f"{row['n_junk_mean']:.1f}", f"{row['n_learnable_mean']:.1f}",
             cell(row, "accuracy", 3), cell(row, "accuracy_known", 3), cell(row, "accuracy_learnable", 3)]
            for summary in summaries for row in summary["table"]]
    return table(["budget / domain", "method", "seeds", "examples", "junk in set", "learnable in set",
                   "accuracy, mean ± std over seeds", "known facts", "learnable facts"], rows)


def _pilot_name(result: dict) -> str:
    spec = result["spec"]
    return f"{MODEL_NAMES.get(spec['model'], spec['model'])} on {Path(spec['pool']).name}"


def pilot_decisions(results: list[dict]) -> str:
    """A pilot's decision per budget: the method recommended (or none), its raw and Holm-adjusted p and the floor."""
    rows = []
    for result in results:
        for decision in result["decisions"]:
            evidence = decision["evidence"]
            rows.append([_pilot_name(result), decision["budget"], decision["recommended"] or "none",
                         f"{evidence['method']} {evidence['mean_delta']:+.4f} {_ci(evidence['ci95'])}",
                         f"{decision['p']:.4f}", f"{decision['p_adjusted']:.4f}", f"{decision['p_floor']:.4f}"])
    return table(["pilot", "budget", "recommended", "best evidence: delta vs random median [95% CI]", "p",
                  "p (Holm)", "p floor"], rows)


def pilot_comparisons(results: list[dict]) -> str:
    """Each method against the random median per budget: mean delta, hierarchical CI, p raw and adjusted, the sign
    test with its floor, and the method's rank among the random draws in each replicate."""
    rows = []
    for result in results:
        for comparison in result["comparisons"]:
            sign = comparison["sign_test"]
            ranks = ", ".join(f"{entry['rank']}/{entry['of']}" for entry in comparison["replicates"])
            rows.append([_pilot_name(result), comparison["budget"], comparison["method"],
                         f"{comparison['mean_delta']:+.4f}", _ci(comparison["hierarchical"]["ci95"]),
                         f"{comparison['hierarchical']['p']:.4f}", f"{comparison['p_adjusted']:.4f}",
                         f"{sign['p']:.3f} (floor {sign['p_floor']:.3f})", ranks])
    return table(["pilot", "budget", "method", "mean delta", "hierarchical 95% CI", "p", "p (Holm)",
                  "sign test p", "rank among random"], rows)


RENDERERS: dict[str, Callable[[list[dict]], str]] = {
    "pilot-decisions": pilot_decisions, "pilot-comparisons": pilot_comparisons,
    "real-sft-methods": real_sft_methods, "real-sft-pools": real_sft_pools, "real-sft-across": real_sft_across,
    "real-sft-null": real_sft_null, "noise-ranks": noise_ranks, "noise-selections": noise_selections,
    "noise-seeds": noise_seeds, "split-sweep": split_sweep, "noise-summary": noise_summary,
    "real-pool-counts": real_pool_counts, "world-sft": world_sft, **BENCHMARK_RENDERERS,
}


def render(text: str, root: Path) -> str:
    """`text` with every table block rendered anew from its files."""
    def block(match: re.Match[str]) -> str:
        files = match.group("files").split()
        summaries = [_summary(root / name) for name in files]
        return match.group(1) + RENDERERS[match.group("name")](summaries) + match.group(5)

    return BLOCK.sub(block, text)


def _summary(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".jsonl":
        return json.loads(text)
    *lines, last = [json.loads(line) for line in text.splitlines() if line.strip()]
    return {**last, "lines": lines}


def stale_documents(root: Path, write: bool = False) -> list[str]:
    """The documents whose tables differ from what their files render (rewritten when `write`)."""
    stale = []
    for name in DOCUMENTS:
        path = root / name
        text = path.read_text(encoding="utf-8")
        rendered = render(text, root)
        if rendered != text:
            stale.append(name)
            if write:
                path.write_text(rendered, encoding="utf-8")
    return stale
