"""The renderers of benchmarks/README.md's tables: each turns the result files a block names (benchmarks/results/)
into its table; the block mechanism is capsel_lab.result_tables'.
"""

from __future__ import annotations

from typing import Callable

from capsel_lab.markdown_table import table


def pool_scale_increment(summaries: list[dict]) -> str:
    """`benchmarks/pool_scale.py --add-rows`: each stage's seconds in the full run and the increment, their share,
    the whole run and the peaks."""
    full, increment = summaries[0], summaries[0]["increment"]
    rows = []
    for whole, added in zip(full["stages"], increment["stages"]):
        rows.append([_increment_stage(added), f"{whole['seconds']:.1f}", f"{added['seconds']:.1f}",
                     f"{added['seconds'] / whole['seconds']:.1%}"])
    rows.append(["**whole run**", f"**{full['total_seconds']:.1f}**", f"**{increment['total_seconds']:.1f}**",
                 f"**{increment['total_seconds'] / full['total_seconds']:.1%}**"])
    rows.append(["peak RSS of the process", f"{full['peak_rss_gib']:.2f} GiB", f"{increment['peak_rss_gib']:.2f} GiB",
                 ""])
    return table(["stage", f"full run ({full['rows']:,} rows): s", f"increment ({increment['rows']:,} rows): s",
                   "increment / full"], rows, numbers_from=1)


def select_profile_before_after(summaries: list[dict]) -> str:
    """`benchmarks/select_profile.py` on one store before and after a change (the two files in that order): each
    part's seconds under cProfile, a part the profile did not see as "–", and the whole refit and reselect."""
    before, after = summaries
    parts = list(dict.fromkeys([*after["parts_s"], *before["parts_s"]]))  # in the newer profile's order
    rows = [[part, *(_optional_seconds(run["parts_s"].get(part)) for run in (before, after))] for part in parts]
    rows.append(["**residualize, then select, gate and publish**", f"**{before['wall_s']:.1f}**",
                 f"**{after['wall_s']:.1f}**"])
    return table(["part", "before: s", "after: s"], rows, numbers_from=1)


def select_profile_pairs(summaries: list[dict]) -> str:
    """`benchmarks/select_profile.py` alternated on one store, before and after a change (the files as before, after,
    before, after, ...): each pair's wall time and difference, then the mean difference with its paired 95% t
    interval (a pair is one replicate: the two ran back to back on the same store)."""
    from scipy import stats

    pairs = list(zip(summaries[0::2], summaries[1::2], strict=True))
    saved = [before["wall_s"] - after["wall_s"] for before, after in pairs]
    rows = [[str(number), f"{before['wall_s']:.1f}", f"{after['wall_s']:.1f}", f"{difference:.1f}"]
            for number, ((before, after), difference) in enumerate(zip(pairs, saved), start=1)]
    mean = sum(saved) / len(saved)
    spread = stats.t.ppf(0.975, len(saved) - 1) * stats.sem(saved)
    rows.append([f"**mean of {len(saved)} pairs**", f"**{sum(b['wall_s'] for b, _ in pairs) / len(pairs):.1f}**",
                 f"**{sum(a['wall_s'] for _, a in pairs) / len(pairs):.1f}**",
                 f"**{mean:.1f}** (95% CI {mean - spread:.1f} to {mean + spread:.1f})"])
    return table(["pair", "before: s", "after: s", "before − after: s"], rows, numbers_from=1)


def reselect_floor(summaries: list[dict]) -> str:
    """`benchmarks/reselect_floor.py --full-run`, one or more runs on one store: each part's wall and CPU seconds per
    run, then the floor they make with the new rows' ingest, the same floor without excluded.parquet's encoding,
    and the goal of 5% of the full run."""
    rows = [[part, *(_wall_and_cpu(run["parts"][part]) for run in summaries)] for part in summaries[0]["parts"]]
    first = summaries[0]["budget"]
    rows.append([f"**floor: the new rows' ingest ({first['increment_new_rows_ingest_s']:.1f} s) + the CPU seconds "
                 f"over {first['cores']} cores**",
                 *(f"**{run['budget']['floor_s']:.1f}** ({run['budget']['floor_share_of_full_run']:.1%})"
                   for run in summaries)])
    rows.append(["the same floor without excluded.parquet's encoding",
                 *(_floor_without(run, "excluded.parquet encoded, bare") for run in summaries)])
    rows.append([f"goal: 5% of the full run ({first['full_run_s']:.1f} s)",
                 *(f"{run['budget']['goal_s']:.1f}" for run in summaries)])
    return table(["part", *(f"run {number}: wall / CPU s" for number in range(1, len(summaries) + 1))], rows,
                 numbers_from=1)


def _wall_and_cpu(seconds: dict) -> str:
    return f"{seconds['wall_s']:.1f} / {_optional_seconds(seconds.get('cpu_s'))}"


def _floor_without(run: dict, part: str) -> str:
    """A reselect_floor run's floor less one part's CPU seconds spread over the cores, with its share."""
    budget = run["budget"]
    floor = budget["floor_s"] - run["parts"][part]["cpu_s"] / budget["cores"]
    return f"{floor:.1f} ({floor / budget['full_run_s']:.1%})"


def _optional_seconds(seconds: float | None) -> str:
    return "–" if seconds is None else f"{seconds:.1f}"


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
        return _bold(f"{summary['slope_s_per_million_stored'][column]:+.2f}", in_bold and column in bold)

    rows.append(["**slope, s per million stored**", *(slope(plain, c, True) for c in plain_columns),
                 *(slope(split, c, c == "seconds") for c in split_columns)])
    return table(["candidates stored before: M", "ingest: s", "keyed insert: s", "unkeyed insert: s",
                   "ingest (2nd run): s", "its checkpoint: s", "keyed insert: s", "keyed checkpoint: s",
                   "unkeyed insert: s"], rows, numbers_from=0)


def excluded_scale(summaries: list[dict]) -> str:
    """`benchmarks/excluded_scale.py`: rows written to excluded.parquet, their rate, the file, and the peak RSS
    above the process's before the write."""
    rows = [[f"{run['rows_written']:,}", f"{run['seconds']:.1f}", f"{run['rows_per_s']:,}",
             f"{run['file_mib']:.1f} MiB", f"{run['text_mib']:,} MiB", f"**{run['rss_peak_above_before_mib']:,} MiB**"]
            for run in summaries]
    return table(["rows written", "seconds", "rows/s", "file", "texts in it", "RSS peak above before the write"],
                  rows, numbers_from=0)


FLOW_COMMANDS = {"select_first": "`flow select`, first 50 rows", "rescore_noop": "`flow rescore`, nothing new",
                 "select_new_rows": "`flow select`, 50 new rows"}
# the repeat runs, which the goal of under 10 s beyond the work is about
REPEAT_RUNS = ("rescore_noop", "select_new_rows")


def _bold(cell: str, bold: bool = True) -> str:
    return f"**{cell}**" if bold else cell


def _seconds(value: float, bold: bool = False) -> str:
    return _bold(f"{value:.1f} s", bold)


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
    return table(["command", "wall before", "overhead before", "wall after", "overhead after"], rows)


def flow_overhead_runs(summaries: list[dict]) -> str:
    """`benchmarks/flow_overhead.py` at several commits on one VM: each command's overhead beyond its work, and its
    "Loading weights" bars at the first commit and the last."""
    first, last = summaries[0], summaries[-1]
    rows = [[FLOW_COMMANDS[run] + (" (surveys the model every time)" if run == "select_first" else ""),
             *(_seconds(summary[run]["overhead_s"], summary is last and run in REPEAT_RUNS) for summary in summaries),
             f"{first[run]['loading_weights_bars']} → {last[run]['loading_weights_bars']}"] for run in FLOW_COMMANDS]
    labels = [f"overhead `{summary['label']}`" if summary is not last else "overhead main" for summary in summaries]
    return table(["command", *labels, '"Loading weights" bars (before → main)'], rows)


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
    return table(["model (prompt format)", "tokens per candidate: prompt / reference / ŷ", "engine",
                   "generate, then score (engine)", "paper-style", "engine / paper-style",
                   "max \\|Δ D_ℓ\\| vs paper-style", "engine GFLOP per candidate", "bound at measured matmul rate"],
                  rows)


def score_throughput_plain_head(summaries: list[dict]) -> str:
    """`benchmarks/score_throughput.py --engine-only --also-plain-head`, a run per model and batch size: the engine
    with its head in vocabulary slices and with the plain head, alternated round by round; whether every result was
    identical; the head row counts whose slices served and those whose check kept the plain product."""
    rows = []
    for run in summaries:
        shapes = run["sliced_head"]["shapes_checked"]
        rows.append([
            *_beside_other_head(run, "plain_head"),
            " / ".join(", ".join(str(shape["rows"]) for shape in shapes if shape["same_bits"] is agreed) or "–"
                       for agreed in (True, False)),
            f"{run['matmul_gflops_measured']:.0f}",
        ])
    return table(["model, batch", "slices: s per round", "plain head: s per round", "median cand/s: slices / plain",
                  "gain", "every result identical", "head rows: slices served / kept plain", "matmul GFLOP/s"], rows,
                 numbers_from=1)


def _beside_other_head(run: dict, other: str) -> list[str]:
    """The cells a run of the engine beside another head (`score_throughput.py --also-<other>`) shares: model and
    batch, each one's rounds, their medians, the gain and whether every result was identical."""
    engine, beside = run["engine_fused"], run[f"engine_fused_{other}"]
    return [
        f"{BENCHMARK_MODELS.get(run['model']['name'], run['model']['name'])}, batch {run['model']['batch_size']}",
        _rounds(engine), _rounds(beside),
        f"**{engine['candidates_per_s_median']:.2f}** / {beside['candidates_per_s_median']:.2f}",
        f"{engine['candidates_per_s_median'] / beside['candidates_per_s_median'] - 1:+.0%}",
        "yes" if run[other]["results_identical"] else "**no**",
    ]


def score_throughput_greedy_head(summaries: list[dict]) -> str:
    """`benchmarks/score_throughput.py --engine-only --also-exact-greedy-head`: the engine with its greedy steps'
    head screened from a bfloat16 estimate and with that head exact in slices, alternated round by round; whether
    every result was identical; the steps screened and the share of slices they computed exactly."""
    rows = []
    for run in summaries:
        greedy = run["greedy_head"]
        rows.append([
            *_beside_other_head(run, "exact_greedy_head"),
            f"{greedy['steps']:,}", f"{greedy['slices_kept'] / max(greedy['slices'], 1):.1%}",
            f"{run['process']['peak_rss_gib']:.2f}", f"{run['matmul_gflops_measured']:.0f}",
        ])
    return table(["model, batch", "screened: s per round", "exact: s per round", "median cand/s: screened / exact",
                  "gain", "every result identical", "greedy steps screened", "slices computed exactly",
                  "peak RSS GiB", "matmul GFLOP/s"], rows, numbers_from=1)


def cpu_kernels(summaries: list[dict]) -> str:
    """`benchmarks/cpu_kernels.py`: each product's ms per call as nn.Linear runs it, as vocabulary slices (the head)
    and on oneDNN with a prepacked weight, and whether each gave nn.Linear's bits."""
    rows = []
    for run in summaries:
        for product in run["products"]:
            ms, same = product["ms"], product["same_bits"]
            rows.append([
                f"{product['product']} ({' x '.join(f'{size:,}' for size in product['weight'])})",
                f"{product['rows']:,}", f"{ms['linear']:.2f}",
                *(f"{ms[way]:.2f} ({'same bits' if same[way] else 'other bits'})" if way in ms else "–"
                  for way in ("slices", "onednn_packed")),
            ])
    return table(["product (weight)", "rows", "nn.Linear (MKL): ms", "vocabulary slices: ms", "oneDNN, prepacked: ms"],
                 rows, numbers_from=1)


def _rounds(pipeline: dict) -> str:
    return " / ".join(f"{seconds:.1f}" for seconds in pipeline["seconds_per_round"])


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
    return table([f"model (CPU, {first['dtype']}, 2 cores)", f"batch {first['batch_size']}",
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
    return table(["", *characters, "increment"], rows)


def help_time_rounds(summaries: list[dict]) -> str:
    """`benchmarks/help_time.py`, rounds of the tree before and after (the files in pairs, before first): each side's
    slowest `--help` and, after, how many commands took 0.5 s or more."""
    rows = []
    for number, (before, after) in enumerate(zip(summaries[::2], summaries[1::2], strict=True), start=1):
        slow = [seconds for seconds in after["median_s"].values() if seconds >= 0.5]
        at_half = f"{len(slow)} of {len(after['median_s'])}, up to {max(slow):.2f} s" if slow else "none"
        rows.append([str(number), _slowest(before), _slowest(after), at_half])
    return table(["round", "before: slowest", "after: slowest", "after: commands at 0.5 s or more"], rows)


def _slowest(summary: dict) -> str:
    command = max(summary["median_s"], key=summary["median_s"].get)
    return f"{summary['median_s'][command]:.2f} s ({command})"


def pool_scale_growth(summaries: list[dict]) -> str:
    """`benchmarks/pool_scale.py` at 1M and 10M rows, and 10M again: each stage's seconds, the 10M / 1M ratio,
    the peak at 10M and the second 10M run."""
    small, large, again = summaries
    rows = []
    for one, ten, second in zip(small["stages"], large["stages"], again["stages"], strict=True):
        rows.append([_with_counts(ten), f"{one['seconds']:.1f}", f"{ten['seconds']:.1f}",
                     f"{ten['seconds'] / one['seconds']:.1f}", f"{ten['peak_rss_gib']:.2f} GiB",
                     f"{second['seconds']:.1f}"])
    rows.append(["**whole run**", f"{small['total_seconds']:.1f}", f"**{_with_minutes(large['total_seconds'])}**",
                 f"{large['total_seconds'] / small['total_seconds']:.1f}", f"**{large['peak_rss_gib']:.2f} GiB**",
                 f"**{_with_minutes(again['total_seconds'])}, {again['peak_rss_gib']:.2f} GiB**"])
    return table(["stage", f"{_millions(small['rows'])} rows: s", f"{_millions(large['rows'])} rows: s",
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
        changed = stage["stage"] not in unchanged
        seconds = [[run["stages"][index]["seconds"] for run in runs] for runs in columns]
        rows.append([stage["stage"] + ("" if changed else " (unchanged)"),
                     *(_side_by_side(cells, changed and runs is after_10m) for cells, runs in zip(seconds, columns)),
                     _side_by_side([value / stage["seconds"] for value in seconds[4]]),
                     _side_by_side([value / seconds[1][0] for value in seconds[5]], changed)])
    rows.append(["**whole run**",
                 *(_side_by_side([run["total_seconds"] for run in runs], runs is after_10m) for runs in columns),
                 _side_by_side([run["total_seconds"] / base["total_seconds"] for run in before_10m]),
                 _side_by_side([run["total_seconds"] / after_1m["total_seconds"] for run in after_10m])])
    peaks = [_ingest_score_peaks(runs[-1]) for runs in columns]
    rows.append(["peak RSS of ingest / score (a column's last run)", *peaks, "", ""])
    sizes = ["1M before", "1M after", "3M before", "3M after", "10M before", "10M after"]
    return table(["stage", *(f"{size}: s" for size in sizes), "10M / 1M before", "10M / 1M after"], rows,
                  numbers_from=1)


def _side_by_side(values: list[float], bold_last: bool = False) -> str:
    """Several runs' figures in one cell, the last in bold when it is the one the text reads."""
    cells = [f"{value:.1f}" for value in values]
    cells[-1] = _bold(cells[-1], bold_last)
    return ", ".join(cells)


def _ingest_score_peaks(run: dict) -> str:
    ingest, score = run["stages"][0], run["stages"][1]
    return f"{ingest['peak_rss_gib']:.2f} / {score['peak_rss_gib']:.2f} GiB"


def _millions(rows: int) -> str:
    return f"{rows / 1e6:g}M"


def _with_minutes(seconds: float) -> str:
    return f"{seconds:.1f} ({seconds / 60:.1f} min)"


def _counts(stage: dict) -> str | None:
    """What a pool_scale stage line counted: ingest's rows, score's candidates, the selection's members."""
    if "inserted" in stage:
        return (f"{stage['inserted']:,} inserted + {stage['duplicates']:,} duplicates + {stage['quarantined']:,} "
                "quarantined")
    if "scored" in stage:
        return f"{stage['scored']:,} candidates"
    if "members" in stage:
        return f"{stage['members']:,} members"
    return None


def _with_counts(stage: dict) -> str:
    counts = _counts(stage)
    return f"{stage['stage']} ({counts})" if counts else stage["stage"]


def _increment_stage(added: dict) -> str:
    """An increment's stage: what it took of the new rows (ingest, score), or that it covered the whole pool."""
    counts = _counts(added)
    if "inserted" in added or "scored" in added:
        return f"{added['stage']} (increment: {counts})"
    return f"{added['stage']} (the whole pool{f': {counts}' if counts else ''})"


BENCHMARK_RENDERERS: dict[str, Callable[[list[dict]], str]] = {
    "pool-scale-increment": pool_scale_increment, "pool-scale-growth": pool_scale_growth,
    "select-profile-before-after": select_profile_before_after, "select-profile-pairs": select_profile_pairs,
    "pool-scale-before-after": pool_scale_before_after, "ingest-growth": ingest_growth,
    "excluded-scale": excluded_scale, "flow-overhead-pair": flow_overhead_pair,
    "flow-overhead-runs": flow_overhead_runs,
    "help-time-rounds": help_time_rounds, "huge-text-memory": huge_text_memory, "score-throughput": score_throughput,
    "score-throughput-plain-head": score_throughput_plain_head, "cpu-kernels": cpu_kernels,
    "score-throughput-greedy-head": score_throughput_greedy_head,
    "multimodal-batching": multimodal_batching, "reselect-floor": reselect_floor,
}
