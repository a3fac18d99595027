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

DOCUMENTS = ("README.md", "capsel_lab/README.md", "docs/lab.md", "benchmarks/README.md")
BLOCK = re.compile(r"(<!-- table: (?P<name>[a-z0-9-]+) (?P<files>[^>]+?) -->\n)(?P<body>.*?)(<!-- /table -->)",
                   re.DOTALL)
MODEL_NAMES = {"smollm2-135m-instruct": "SmolLM2-135M-Instruct", "gemma3-270m": "Gemma 3 270M (base)",
               "demo": "demo model"}


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(header: list[str], rows: list[list[str]], numbers_from: int | None = None) -> str:
    """A Markdown table; its columns from `numbers_from` on are right-aligned."""
    rule = ["---:" if numbers_from is not None and column >= numbers_from else "---" for column in range(len(header))]
    lines = [_row(header), "|" + "".join(f"{cell}|" for cell in rule), *(_row(row) for row in rows)]
    return "\n".join(lines) + "\n"


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
    return _table(["model", "pools", "method", "n", "rows", "junk", "response tokens",
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
    return _table(["model", "pools", "delta", "pool", "value", "95% CI (paired bootstrap)", "verdict"], rows)


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
    return _table(["model", "pools", "delta", "n", "lower loss in", "better / worse (CI excludes 0)", "mean delta",
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
    return _table(["model", "pools", "n", "CAP among random subsets of pool 0", "CAP's loss",
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
    return _table(["model", "prompt", "method", "junk kind", "median pct (seeds)", "below clean p5",
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
    return _table(["model", "prompt", "CAP", "CAP + guard", "PPL", "random", "clean excluded", "excluded reasons",
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
    return _table(["seed", "PPL: junk pct median / min, junk above all clean", "CAP: junk pct median / min / max",
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
    return _table(["model, prompt (blocks)", "late", "blocks", f"seed {seeds[0]} (chooses)",
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
    return _table(["model", "prompt", "PPL (high first)", "CAP z: all junk", "CAP z: token salad",
                   "CAP z: shuffled characters", "held back by the PPL guard (95)"], rows)


def real_pool_counts(manifests: list[dict]) -> str:
    """The bundled real pool: clean rows and junk of each kind per domain."""
    sources = {"math": "math (GSM8K train)", "code": "code (HumanEval)"}
    rows = [[sources.get(domain, domain), str(counts["clean"]), str(counts["salad"]), str(counts["shuffled"]),
             str(sum(counts.values()))] for domain, counts in manifests[0]["counts"].items()]
    return _table(["domain", "clean", "junk: salad", "junk: shuffled", "records"], rows)


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
    return _table(["budget / domain", "method", "seeds", "examples", "junk in set", "learnable in set",
                   "accuracy, mean ± std over seeds", "known facts", "learnable facts"], rows)


def pool_scale_increment(summaries: list[dict]) -> str:
    """`benchmarks/pool_scale.py --add-rows`: each stage's seconds in the full run and the increment, their share,
    the whole run and the peaks."""
    full, increment = summaries[0], summaries[0]["increment"]
    rows = []
    for whole, added in zip(full["stages"], increment["stages"]):
        rows.append([_pool_scale_stage(whole, added), f"{whole['seconds']:.1f}", f"{added['seconds']:.1f}",
                     f"{added['seconds'] / whole['seconds']:.1%}"])
    rows.append(["**whole run**", f"**{full['total_seconds']:.1f}**", f"**{increment['total_seconds']:.1f}**",
                 f"**{increment['total_seconds'] / full['total_seconds']:.1%}**"])
    rows.append(["peak RSS of the process", f"{full['peak_rss_gib']:.2f} GiB", f"{increment['peak_rss_gib']:.2f} GiB",
                 ""])
    return _table(["stage", f"full run ({full['rows']:,} rows): s", f"increment ({increment['rows']:,} rows): s",
                   "increment / full"], rows, numbers_from=1)


def ingest_growth(summaries: list[dict]) -> str:
    """`benchmarks/ingest_growth.py`, a run and its `--split-checkpoint` run: each file's seconds by the candidates
    stored before it, beside DuckDB's keyed and unkeyed inserts, and each column's slope per million stored."""
    plain, split = summaries
    plain_columns = ["seconds", "keyed_seconds", "unkeyed_seconds"]
    split_columns = ["seconds", "checkpoint_seconds", "keyed_seconds", "keyed_checkpoint_seconds", "unkeyed_seconds"]
    rows = [[f"{first['stored_before'] / 1e6:.2f}", *(f"{first[c]:.2f}" for c in plain_columns),
             *(f"{second[c]:.2f}" for c in split_columns)]
            for first, second in zip(plain["lines"], split["lines"], strict=True)]
    # bold as the notes read them: ingest's growth in both runs, and the keyed insert's beside the first
    bold = {"seconds", "keyed_seconds"}

    def slope(summary: dict, column: str, in_bold: bool) -> str:
        cell = f"{summary['slope_s_per_million_stored'][column]:+.2f}"
        return f"**{cell}**" if in_bold and column in bold else cell

    rows.append(["**slope, s per million stored**", *(slope(plain, c, True) for c in plain_columns),
                 *(slope(split, c, c == "seconds") for c in split_columns)])
    return _table(["candidates stored before: M", "ingest: s", "keyed insert: s", "unkeyed insert: s",
                   "ingest (2nd run): s", "its checkpoint: s", "keyed insert: s", "keyed checkpoint: s",
                   "unkeyed insert: s"], rows, numbers_from=0)


def excluded_scale(summaries: list[dict]) -> str:
    """`benchmarks/excluded_scale.py`: rows written to excluded.parquet, their rate, the file, and the peak RSS
    above the process's before the write."""
    rows = [[f"{run['rows_written']:,}", f"{run['seconds']:.1f}", f"{run['rows_per_s']:,}",
             f"{run['file_mib']:.1f} MiB", f"{run['text_mib']:,} MiB", f"**{run['rss_peak_above_before_mib']:,} MiB**"]
            for run in summaries]
    return _table(["rows written", "seconds", "rows/s", "file", "texts in it", "RSS peak above before the write"],
                  rows, numbers_from=0)


FLOW_COMMANDS = {"select_first": "`flow select`, first 50 rows", "rescore_noop": "`flow rescore`, nothing new",
                 "select_new_rows": "`flow select`, 50 new rows"}
# the repeat runs, which the goal of under 10 s beyond the work is about
REPEAT_RUNS = ("rescore_noop", "select_new_rows")


def _seconds(value: float, bold: bool = False) -> str:
    cell = f"{value:.1f} s"
    return f"**{cell}**" if bold else cell


def flow_overhead_pair(summaries: list[dict]) -> str:
    """`benchmarks/flow_overhead.py` before and after: each command's wall time and the overhead beyond its work,
    and the "Loading weights" bars of all three."""
    before, after = summaries
    rows = [[FLOW_COMMANDS[run] + (" (surveys the model both times)" if run == "select_first" else ""),
             _seconds(before[run]["wall_s"]), _seconds(before[run]["overhead_s"], run in REPEAT_RUNS),
             _seconds(after[run]["wall_s"]), _seconds(after[run]["overhead_s"], run in REPEAT_RUNS)]
            for run in FLOW_COMMANDS]
    rows.append(['transformers "Loading weights" bars in the output (all three)', "", str(_bars(before)), "",
                 str(_bars(after))])
    return _table(["command", "wall before", "overhead before", "wall after", "overhead after"], rows)


def flow_overhead_runs(summaries: list[dict]) -> str:
    """`benchmarks/flow_overhead.py` at several commits on one VM: each command's overhead beyond its work, and its
    "Loading weights" bars at the first commit and the last."""
    first, last = summaries[0], summaries[-1]
    rows = [[FLOW_COMMANDS[run] + (" (surveys the model every time)" if run == "select_first" else ""),
             *(_seconds(summary[run]["overhead_s"], summary is last and run in REPEAT_RUNS) for summary in summaries),
             f"{first[run]['loading_weights_bars']} → {last[run]['loading_weights_bars']}"] for run in FLOW_COMMANDS]
    labels = [f"overhead `{summary['label']}`" if summary is not last else "overhead main" for summary in summaries]
    return _table(["command", *labels, '"Loading weights" bars (before → main)'], rows)


def _bars(summary: dict) -> int:
    return sum(summary[run]["loading_weights_bars"] for run in FLOW_COMMANDS)


BENCHMARK_MODELS = {"gemma3-270m": "Gemma 3 270M", "smollm2-135m-instruct": "SmolLM2-135M-Instruct"}


def score_throughput(summaries: list[dict]) -> str:
    """`benchmarks/score_throughput.py`, one round per model: the engine, generate-then-score and the paper-style
    pipeline in candidates/s, their ratio and largest divergence difference, and the engine's matmul bound."""
    rows = []
    for run in summaries:
        model, pool = run["model"], run["pool"]
        tokens = " / ".join(f"{pool[key]:.0f}" for key in ("mean_prompt_tokens", "mean_response_tokens",
                                                            "mean_generated_tokens"))
        engine, paper = run["engine_fused"], run["paper_style"]
        paper_batch = model.get("paper_batch_size", model["batch_size"])
        rows.append([
            f"{BENCHMARK_MODELS.get(model['name'], model['name'])} ({model['prompt_format']})", tokens,
            f"**{engine['candidates_per_s_median']:.2f} cand/s** ({engine['seconds_per_round'][0]:.0f} s)",
            f"{run['engine_generate_then_score']['candidates_per_s_median']:.2f} cand/s",
            f"{paper['candidates_per_s_median']:.2f} cand/s (batch {paper_batch})",
            f"**{run['ratio_engine_over_paper_median']:.1f}×**", _small(run["max_abs_diff_layers_1_to_L_minus_1"]),
            f"{run['engine_gflop_per_candidate']:.1f}",
            f"{run['candidates_per_s_bound_at_matmul_peak']:.1f} cand/s at {run['matmul_gflops_measured']:.0f} GFLOP/s",
        ])
    return _table(["model (prompt format)", "tokens per candidate: prompt / reference / ŷ", "engine",
                   "generate, then score (engine)", "paper-style", "engine / paper-style",
                   "max \\|Δ D_ℓ\\| vs paper-style", "engine GFLOP per candidate", "bound at measured matmul rate"],
                  rows)


def _small(value: float) -> str:
    """1.4e-7 rather than 1.4e-07."""
    mantissa, exponent = f"{value:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def multimodal_batching(summaries: list[dict]) -> str:
    """`benchmarks/multimodal_throughput.py --compare-batch`: the batched rate beside batch 1 in the same process,
    whether ŷ matched and the largest divergence difference."""
    rows = [[f"{run['model'].replace('tiny llava', 'tiny Llava (`capsel_lab.tiny_vlm`)')}, {run['n_candidates']} "
             f"candidates, {run['prompt_ids_mean']:.0f} prompt ids, {run['generated_ids_mean']:.0f} generated",
             f"{run['candidates_per_s']:.0f} cand/s ({run['model_s']:.2f} s)",
             f"{run['compared']['candidates_per_s']:.1f} cand/s ({run['compared']['model_s']:.1f} s)",
             "yes" if run["compared"]["same_y_hat"] else "no", _small(run["compared"]["max_abs_divergence_diff"])]
            for run in summaries]
    first = summaries[0]
    return _table([f"model (CPU, {first['dtype']}, 2 cores)", f"batch {first['batch_size']}",
                   f"batch {first['compared']['batch_size']}, same process", "same ŷ", "max \\|Δ D_ℓ\\|"], rows)


def huge_text_memory(summaries: list[dict]) -> str:
    """`benchmarks/huge_text_memory.py`: `capsel score`'s peak RSS on the short and the long text, and what
    tokenising the texts whole or cut first adds."""
    run = summaries[0]
    score, tokenise = run["score_peak_mib"], run["tokenise_peak_increment_mib"]
    short_text, long_text = (key for key in score if key != "increment")
    rows = [["`capsel score` peak RSS", f"{score[short_text]:,} MiB", f"{score[long_text]:,} MiB",
             f"**{score['increment']:,} MiB**"],
            ["tokenising the two texts whole (before)", "", "", f"{tokenise['whole_texts']:,} MiB"],
            ["`build_inputs` (cut first, capsel/cap_engine/huge_text_cut.py)", "", "",
             f"{tokenise['build_inputs_cut']:,} MiB"]]
    characters = [f"{int(key.removesuffix('_chars')):,} characters" for key in (short_text, long_text)]
    return _table(["", *characters, "increment"], rows)


def help_time_rounds(summaries: list[dict]) -> str:
    """`benchmarks/help_time.py`, rounds of the tree before and after (the files in pairs, before first): each side's
    slowest `--help` and, after, how many commands took 0.5 s or more."""
    rows = []
    for number, (before, after) in enumerate(zip(summaries[::2], summaries[1::2], strict=True), start=1):
        slow = [seconds for seconds in after["median_s"].values() if seconds >= 0.5]
        at_half = f"{len(slow)} of {len(after['median_s'])}, up to {max(slow):.2f} s" if slow else "none"
        rows.append([str(number), _slowest(before), _slowest(after), at_half])
    return _table(["round", "before: slowest", "after: slowest", "after: commands at 0.5 s or more"], rows)


def _slowest(summary: dict) -> str:
    command = max(summary["median_s"], key=summary["median_s"].get)
    return f"{summary['median_s'][command]:.2f} s ({command})"


def pool_scale_growth(summaries: list[dict]) -> str:
    """`benchmarks/pool_scale.py` at 1M and 10M rows, and 10M again: each stage's seconds, the 10M / 1M ratio,
    the peak at 10M and the second 10M run."""
    small, large, again = summaries
    rows = []
    for one, ten, second in zip(small["stages"], large["stages"], again["stages"], strict=True):
        rows.append([_stage_with_counts(ten), f"{one['seconds']:.1f}", f"{ten['seconds']:.1f}",
                     f"{ten['seconds'] / one['seconds']:.1f}", f"{ten['peak_rss_gib']:.2f} GiB",
                     f"{second['seconds']:.1f}"])
    rows.append(["**whole run**", f"{small['total_seconds']:.1f}", f"**{_with_minutes(large['total_seconds'])}**",
                 f"{large['total_seconds'] / small['total_seconds']:.1f}", f"**{large['peak_rss_gib']:.2f} GiB**",
                 f"**{_with_minutes(again['total_seconds'])}, {again['peak_rss_gib']:.2f} GiB**"])
    return _table(["stage", f"{_millions(small['rows'])} rows: s", f"{_millions(large['rows'])} rows: s",
                   f"{_millions(large['rows'])} / {_millions(small['rows'])}",
                   f"peak RSS at {_millions(large['rows'])}", f"{_millions(large['rows'])} again (`-b`): s"],
                  rows, numbers_from=1)


def pool_scale_before_after(summaries: list[dict]) -> str:
    """`benchmarks/pool_scale.py` before and after a change at 1M, 3M and 10M rows (the files: the 1M run the
    "before" ratios divide by, then 1M before (two runs), 1M after, 3M before, 3M after, 10M before (two), 10M after
    (two)): each stage's seconds, several runs of a column side by side, the second 10M run after in bold, and the
    10M / 1M ratios."""
    base, *before_1m, after_1m, before_3m, after_3m = summaries[:6]
    before_10m, after_10m = summaries[6:8], summaries[8:10]
    columns = [before_1m, [after_1m], [before_3m], [after_3m], before_10m, after_10m]
    unchanged = {"residualize", "select, gate, publish"}
    rows = []
    for index, stage in enumerate(base["stages"]):
        def seconds(runs: list[dict], bold_last: bool = False) -> str:
            cells = [f"{run['stages'][index]['seconds']:.1f}" for run in runs]
            if bold_last:
                cells[-1] = f"**{cells[-1]}**"
            return ", ".join(cells)

        def ratios(runs: list[dict], over: dict, bold_last: bool = False) -> str:
            cells = [f"{run['stages'][index]['seconds'] / over['stages'][index]['seconds']:.1f}" for run in runs]
            if bold_last:
                cells[-1] = f"**{cells[-1]}**"
            return ", ".join(cells)

        name = stage["stage"] + (" (unchanged)" if stage["stage"] in unchanged else "")
        changed = stage["stage"] not in unchanged
        rows.append([name, *(seconds(runs, changed and runs is after_10m) for runs in columns),
                     ratios(before_10m, base), ratios(after_10m, after_1m, changed)])
    rows.append(["**whole run**", *(", ".join(_total(run, run is after_10m[-1]) for run in runs) for runs in columns),
                 ", ".join(f"{run['total_seconds'] / base['total_seconds']:.1f}" for run in before_10m),
                 ", ".join(f"{run['total_seconds'] / after_1m['total_seconds']:.1f}" for run in after_10m)])
    peaks = [_ingest_score_peaks(runs[-1]) for runs in columns]
    rows.append(["peak RSS of ingest / score (a column's last run)", *peaks, "", ""])
    sizes = ["1M before", "1M after", "3M before", "3M after", "10M before", "10M after"]
    return _table(["stage", *(f"{size}: s" for size in sizes), "10M / 1M before", "10M / 1M after"], rows,
                  numbers_from=1)


def _total(run: dict, bold: bool) -> str:
    cell = f"{run['total_seconds']:.1f}"
    return f"**{cell}**" if bold else cell


def _ingest_score_peaks(run: dict) -> str:
    ingest, score = run["stages"][0], run["stages"][1]
    return f"{ingest['peak_rss_gib']:.2f} / {score['peak_rss_gib']:.2f} GiB"


def _millions(rows: int) -> str:
    return f"{rows / 1e6:g}M"


def _with_minutes(seconds: float) -> str:
    return f"{seconds:.1f} ({seconds / 60:.1f} min)"


def _stage_with_counts(stage: dict) -> str:
    if "inserted" in stage:
        read = stage["inserted"] + stage["duplicates"] + stage["quarantined"]
        return (f"{stage['stage']} ({read:,} read = {stage['inserted']:,} inserted + {stage['duplicates']:,} "
                f"duplicates + {stage['quarantined']:,} quarantined)")
    if "scored" in stage:
        return f"{stage['stage']} ({stage['scored']:,} candidates, stand-in scorer)"
    if "members" in stage:
        return f"{stage['stage']} ({stage['members']:,} members)"
    return stage["stage"]


def _pool_scale_stage(whole: dict, added: dict) -> str:
    stage = whole["stage"]
    if "inserted" in added:
        return (f"{stage} (increment: {added['inserted']:,} inserted + {added['duplicates']:,} duplicates + "
                f"{added['quarantined']:,} quarantined)")
    if "scored" in added:
        return f"{stage} (increment: {added['scored']:,} candidates)"
    if "members" in added:
        return f"{stage} (the whole pool: {added['members']:,} members)"
    return f"{stage} (the whole pool)"


RENDERERS: dict[str, Callable[[list[dict]], str]] = {
    "real-sft-methods": real_sft_methods, "real-sft-pools": real_sft_pools, "real-sft-across": real_sft_across,
    "real-sft-null": real_sft_null, "noise-ranks": noise_ranks, "noise-selections": noise_selections,
    "noise-seeds": noise_seeds, "split-sweep": split_sweep, "noise-summary": noise_summary,
    "real-pool-counts": real_pool_counts, "world-sft": world_sft, "pool-scale-increment": pool_scale_increment,
    "ingest-growth": ingest_growth, "excluded-scale": excluded_scale,
    "flow-overhead-pair": flow_overhead_pair, "flow-overhead-runs": flow_overhead_runs,
    "help-time-rounds": help_time_rounds, "huge-text-memory": huge_text_memory,
    "pool-scale-growth": pool_scale_growth, "pool-scale-before-after": pool_scale_before_after,
    "score-throughput": score_throughput, "multimodal-batching": multimodal_batching,
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
