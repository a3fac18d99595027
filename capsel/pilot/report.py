"""A pilot's report: the budget curve (each method's mean held-out metric against the budget, the random draws as a
band), a forest plot of the deltas against the random median with their Holm-corrected verdicts, and an HTML page
with the decisions and the tables. Every text from the pool or the options is escaped; nothing in it is markup."""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from capsel.evaluation.forest_plot import COLOURS
from capsel.pilot.statistics import ALPHA

CURVE, FOREST, PAGE = "budget_curve.png", "forest.png", "index.html"


def budget_curve(comparisons: list[dict], metric: str, budget_rows: dict[str, int],
                 x_label: str = "rows selected per sub-pool (budget)") -> Figure:
    """Mean metric over replicates against the budget's rows, one line per method, the random draws as a band."""
    figure = Figure(figsize=(7.0, 4.2), layout="constrained")
    axes = figure.add_subplot()
    budgets = list(dict.fromkeys(c["budget"] for c in comparisons))
    x = [budget_rows[budget] for budget in budgets]
    first = [next(c for c in comparisons if c["budget"] == budget) for budget in budgets]
    # each draw rank's value averaged over replicates: the band runs from the best to the worst draw
    draws = [np.mean([entry["random_values"] for entry in c["replicates"]], axis=0) for c in first]
    axes.fill_between(x, [d.min() for d in draws], [d.max() for d in draws], color="tab:grey", alpha=0.25,
                      label="random draws (best to worst)")
    axes.plot(x, [np.mean([entry["random_median"] for entry in c["replicates"]]) for c in first], color="tab:grey",
              linestyle="--", marker="o", label="random median")
    for name in dict.fromkeys(c["method"] for c in comparisons):
        points = [next(c for c in comparisons if c["budget"] == budget and c["method"] == name) for budget in budgets]
        axes.plot(x, [np.mean([entry["value"] for entry in c["replicates"]]) for c in points], marker="o", label=name)
    axes.set_xlabel(x_label)
    axes.set_ylabel(f"held-out {metric}, mean over replicates")
    axes.set_xticks(x, [f"{budget}\n({rows})" for budget, rows in zip(budgets, x)])
    legend = axes.legend(fontsize=8)
    for text in [*legend.get_texts(), *axes.get_xticklabels()]:
        text.set_parse_math(False)  # method names and budgets are data, never TeX
    return figure


def forest(comparisons: list[dict], metric: str, lower_is_better: bool = True) -> Figure:
    """Each method's mean delta against the random median per budget, its hierarchical 95% interval, coloured by
    its verdict after Holm."""
    figure = Figure(figsize=(7.0, 1.0 + 0.45 * len(comparisons)), layout="constrained")
    axes = figure.add_subplot()
    for position, comparison in enumerate(comparisons):
        low, high = comparison["hierarchical"]["ci95"]
        colour = COLOURS[verdict(comparison, lower_is_better)]
        axes.plot([low, high], [position, position], color=colour, linewidth=2)
        axes.plot([comparison["mean_delta"]], [position], "o", color=colour)
    axes.axvline(0.0, color="black", linewidth=0.8, linestyle="--")
    axes.set_yticks(range(len(comparisons)), [f"{c['method']} at {c['budget']}" for c in comparisons])
    for label in axes.get_yticklabels():
        label.set_parse_math(False)
    axes.invert_yaxis()
    better = "lower" if lower_is_better else "higher"
    axes.set_xlabel(f"{metric} - the random median's ({better} is better); hierarchical bootstrap 95% CI")
    return figure


def verdict(comparison: dict, lower_is_better: bool = True) -> str:
    """better / worse / indistinguishable against the random median, after Holm."""
    low, high = comparison["hierarchical"]["ci95"]
    if comparison["p_adjusted"] >= ALPHA or low <= 0 <= high:
        return "indistinguishable"
    return "better" if (high < 0) == lower_is_better else "worse"


def write_report(folder: Path, result: dict, budget_rows: dict[str, int],
                 x_label: str = "rows selected per sub-pool (budget)") -> Path:
    """The report folder: both figures and index.html; its path."""
    folder.mkdir(parents=True, exist_ok=True)
    metric, comparisons = result["metric"], result["comparisons"]
    budget_curve(comparisons, metric, budget_rows, x_label).savefig(folder / CURVE, dpi=110)
    forest(comparisons, metric, result["lower_is_better"]).savefig(folder / FOREST, dpi=110)
    page = folder / PAGE
    page.write_text(_page(result), encoding="utf-8")
    return page


def _cells(values: list[object]) -> str:
    return "".join(f"<td>{html.escape(str(value))}</td>" for value in values)


def _decision_row(decision: dict) -> str:
    return _cells([decision["budget"], decision["recommended"] or "-", decision["verdict"], f"{decision['p']:.4f}",
                   f"{decision['p_adjusted']:.4f}", f"{decision['p_floor']:.4f}"])


def _comparison_row(comparison: dict, lower_is_better: bool) -> str:
    low, high = comparison["hierarchical"]["ci95"]
    sign = comparison["sign_test"]
    ranks = ", ".join(f"{entry['rank']}/{entry['of']}" for entry in comparison["replicates"])
    return _cells([comparison["budget"], comparison["method"], f"{comparison['mean_delta']:+.4f}",
                   f"[{low:+.4f}, {high:+.4f}]", f"{comparison['hierarchical']['p']:.4f}",
                   f"{comparison['p_adjusted']:.4f}", f"{sign['p']:.3f} (floor {sign['p_floor']:.3f})", ranks,
                   verdict(comparison, lower_is_better)])


def _page(result: dict) -> str:
    e = html.escape
    decisions = "".join(f"<tr>{_decision_row(decision)}</tr>" for decision in result["decisions"])
    comparisons = "".join(f"<tr>{_comparison_row(comparison, result['lower_is_better'])}</tr>"
                          for comparison in result["comparisons"])
    provenance = result["provenance"]
    dirty = f" (dirty: diff {e(str(provenance['diff_sha256']))})" if provenance["dirty"] else ""
    seeds = ", then training seeds" if result["spec"]["train_seeds"] > 1 else ""
    spec = result["spec"]
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>capsel pilot {e(result['pilot_id'])}</title>
<style>body{{font-family:sans-serif;max-width:70em;margin:2em auto}}td,th{{padding:2px 8px;text-align:left}}
table{{border-collapse:collapse}}tr:nth-child(even){{background:#f4f4f4}}</style></head><body>
<h1>Pilot {e(result['pilot_id'])}</h1>
<p>{e(spec['model'])} on {e(spec['pool'])}: {spec['replicates']} disjoint sub-pools of
{result['design']['subpool_rows']} rows, budgets {e(', '.join(spec['budgets']))}, methods
{e(', '.join(spec['methods']))} with {spec['random_draws']} random draws each,
{result['design']['n_heldout']} held-out rows, metric {e(result['metric'])}. Each method is compared with the
median random draw of its sub-pool and budget; across sub-pools by a hierarchical bootstrap (sub-pools, then
rows{seeds}) and a sign test; Holm-Bonferroni over the
{len(result['comparisons'])} comparisons below (raw and adjusted p side by side, and the least p each test can reach
with this many sub-pools).</p>
<h2>Decisions</h2><table><tr><th>budget</th><th>recommended</th><th>verdict</th><th>p</th><th>p adjusted</th>
<th>p floor</th></tr>{decisions}</table>
<h2>Budget curve</h2><img src="{CURVE}" alt="budget curve">
<h2>Against the random median</h2><img src="{FOREST}" alt="forest plot">
<table><tr><th>budget</th><th>method</th><th>mean delta</th><th>95% CI</th><th>p</th><th>p (Holm)</th>
<th>sign test p</th><th>rank among random</th><th>verdict</th></tr>{comparisons}</table>
<p>Commit {e(str(provenance['commit']))}{dirty};
predicted {result['estimate']['predicted']['total_s']:.0f} s, took {result['estimate']['actual']['total_s']:.0f} s.</p>
</body></html>
"""
