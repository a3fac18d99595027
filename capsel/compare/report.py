"""The comparison report: Jaccard and Spearman heatmaps, per-domain length and PPL box plots, index.html."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Sequence

import numpy as np
import orjson
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from capsel.compare.contenders import Comparison
from capsel.compare.metrics import ALL_DOMAINS, jaccard_matrix, spearman_matrices
from capsel.evaluation.comparison_cells import COLUMNS, comparison_cells
from capsel.evaluation.forest_plot import forest_figure


def member_distributions(comparison: Comparison) -> pd.DataFrame:
    """One row per (method, member): domain, response length in characters, and PPL where measured.

    A pool with image rows adds `with_images` (whether the member holds any).
    """
    frames = []
    for contender in comparison.contenders:
        members = contender.selection.members
        frame = pd.DataFrame({
            "method": contender.label,
            "domain": members["domain"].to_numpy(),
            "candidate_id": members["candidate_id"].to_numpy(),
            "response_chars": members["response"].fillna("").str.strip().str.len().to_numpy(),
        })
        ppl = comparison.ppl
        frame["ppl"] = frame["candidate_id"].map(ppl) if ppl is not None else np.nan
        if comparison.image_ids:
            frame["with_images"] = frame["candidate_id"].isin(comparison.image_ids)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["method", "domain", "candidate_id", "response_chars", "ppl"]
    )


def summaries(comparison: Comparison) -> dict:
    """The numbers of the report: overlap, correlations, per-domain medians."""
    overlap = jaccard_matrix({c.label: c.member_ids for c in comparison.contenders})
    correlations = spearman_matrices({c.label: c.scores for c in comparison.contenders if c.scores is not None})
    distributions = member_distributions(comparison)
    medians = distributions.groupby(["domain", "method"], sort=True)[["response_chars", "ppl"]].median()
    sizes = distributions.groupby(["domain", "method"], sort=True).size().rename("n_members")
    if "with_images" in distributions:
        sizes = pd.concat([sizes, distributions.groupby(["domain", "method"], sort=True)["with_images"].sum()
                           .rename("n_with_images")], axis=1)
    return {
        "jaccard": overlap,
        "spearman": correlations,
        "distributions": distributions,
        "medians": medians.join(sizes).reset_index(),
    }


def report_payload(comparison: Comparison, numbers: dict, title: str) -> dict:
    """The comparison's numbers as JSON-ready values: compare.json, and `capsel compare --json`."""
    return {
        "title": title,
        "methods": [c.label for c in comparison.contenders],
        "jaccard": _matrix_json(numbers["jaccard"]),
        "evaluations": numbers["evaluations"].to_dict(orient="records") if "evaluations" in numbers else [],
        "paired": [comparison.as_dict() for comparison in numbers.get("paired", [])],
        "spearman": {name: _matrix_json(frame) for name, frame in numbers["spearman"].items()},
        "medians": numbers["medians"].replace({np.nan: None}).to_dict("records"),
        "ppl_source": comparison.ppl_source,
        "notes": comparison.notes,
    }


def write_report(directory: Path, comparison: Comparison, numbers: dict, title: str) -> list[Path]:
    """Write the PNGs, compare.json and index.html into `directory`; return every file written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    images = []
    overlap = numbers["jaccard"]
    if len(overlap):
        written.append(_save(_heatmap(overlap, "Jaccard overlap of selections", 0.0, 1.0), directory / "jaccard.png"))
        images.append(("Jaccard overlap of the selected sets", written[-1].name))
    correlations = numbers["spearman"]
    if correlations:
        all_domains = correlations[ALL_DOMAINS]
        written.append(_save(_heatmap(all_domains, "Spearman rho of scores (mean over domains)", -1.0, 1.0),
                             directory / "spearman.png"))
        images.append(("Spearman rank correlation between scores, within domains, averaged", written[-1].name))
    distributions = numbers["distributions"]
    for column, label, log in (("response_chars", "response length (characters)", False), ("ppl", "PPL", True)):
        if distributions[column].notna().any():
            path = directory / f"{column}.png"
            written.append(_save(_boxplots(distributions, column, label, log), path))
            images.append((f"{label} of each selection, per domain", path.name))
    if numbers.get("paired"):
        written += _paired_page(directory, numbers["paired"])
    written.append(directory / "compare.json")
    written[-1].write_bytes(orjson.dumps(report_payload(comparison, numbers, title),
                                         option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))
    index = directory / "index.html"
    index.write_text(_page(title, comparison, numbers, images), encoding="utf-8")
    return [*written, index]


def _heatmap(matrix: pd.DataFrame, title: str, low: float, high: float) -> Figure:
    size = max(4.0, 0.9 * len(matrix) + 2.0)
    figure = Figure(figsize=(size, size * 0.85), layout="constrained")
    axes = figure.add_subplot()
    image = axes.imshow(matrix.to_numpy(dtype=float), vmin=low, vmax=high, cmap="viridis")
    axes.set_xticks(range(len(matrix.columns)), matrix.columns, rotation=45, ha="right")
    axes.set_yticks(range(len(matrix.index)), matrix.index)
    for row in range(len(matrix.index)):
        for column in range(len(matrix.columns)):
            value = matrix.iat[row, column]
            axes.text(column, row, "–" if pd.isna(value) else f"{value:.2f}", ha="center", va="center",
                      color="white" if not pd.isna(value) and value < (low + high) / 2 else "black", fontsize=8)
    figure.colorbar(image, ax=axes, shrink=0.8)
    axes.set_title(title, parse_math=False)  # it can name a domain: data, never TeX
    return figure


def _boxplots(distributions: pd.DataFrame, column: str, label: str, log: bool) -> Figure:
    domains = sorted(distributions["domain"].unique())
    methods = list(dict.fromkeys(distributions["method"]))
    figure = Figure(figsize=(max(6.4, 0.6 * len(methods) * len(domains) + 2), 4.2), layout="constrained")
    for index, domain in enumerate(domains, start=1):
        axes = figure.add_subplot(1, len(domains), index)
        of_domain = distributions[distributions["domain"] == domain]
        values = [of_domain.loc[of_domain["method"] == m, column].dropna().to_numpy() for m in methods]
        kept = [(m, v) for m, v in zip(methods, values) if len(v)]
        if kept:
            axes.boxplot([v for _, v in kept], tick_labels=[m for m, _ in kept])
        axes.tick_params(axis="x", labelrotation=45)
        if log:
            axes.set_yscale("log")
        axes.set_title(domain, parse_math=False)  # data, never TeX
        axes.set_ylabel(label if index == 1 else "")
    return figure


def _save(figure: Figure, path: Path) -> Path:
    FigureCanvasAgg(figure)
    figure.savefig(path, dpi=110)
    return path


def _matrix_json(matrix: pd.DataFrame) -> dict:
    return {row: {col: (None if pd.isna(v) else float(v)) for col, v in matrix.loc[row].items()}
            for row in matrix.index}


def _evaluations_html(evaluations: pd.DataFrame | None) -> str:
    if evaluations is None or evaluations.empty:
        return ""
    return ("<h2>What the published selections of this budget trained (capsel evaluate)</h2>"
            f"{evaluations.to_html(index=False, float_format='%.4f', na_rep='–')}")


def _paired_page(directory: Path, paired: list) -> list[Path]:
    """paired.png (the forest plot) and paired.html (it and the table): each target against the reference."""
    image = _save(forest_figure(paired), directory / "paired.png")
    page = directory / "paired.html"
    against = html.escape(paired[0].reference())
    header = "".join(f"<th>{name}</th>" for name in COLUMNS)
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in comparison_cells(c)) + "</tr>"
                   for c in paired)
    page.write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>paired comparisons</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px}</style></head><body>"
        f"<h1>Against {against}: paired bootstrap 95% intervals over the same rows</h1>"
        "<p>delta = value - the reference's value; a selection's seeds count as one target. <a href='index.html'>"
        "back to the comparison</a></p>"
        f"<img src='{image.name}' alt='paired deltas with 95% intervals'><table><tr>{header}</tr>{rows}</table>"
        "</body></html>", encoding="utf-8")
    return [image, page]


def _paired_link(paired: list | None) -> str:
    if not paired:
        return ""
    return (f"<p><a href='paired.html'>Is each difference more than noise? Every selection against "
            f"{html.escape(paired[0].against)}, with paired 95% intervals</a></p>")


def _page(title: str, comparison: Comparison, numbers: dict, images: Sequence[tuple[str, str]]) -> str:
    counts = "".join(
        f"<tr><td>{html.escape(c.label)}</td><td>{len(c.selection.members)}</td>"
        f"<td>{html.escape(c.selection.rule)}</td></tr>"
        for c in comparison.contenders
    )
    correlations = "".join(
        f"<h3>Spearman rho: {html.escape(name)}</h3>{frame.to_html(float_format='%.3f', na_rep='–')}"
        for name, frame in numbers["spearman"].items()
    )
    notes = "".join(f"<li>{html.escape(note)}</li>" for note in comparison.notes)
    pictures = "".join(
        f"<figure><img src='{name}' alt='{html.escape(caption)}'><figcaption>{html.escape(caption)}"
        "</figcaption></figure>"
        for caption, name in images
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}img{max-width:90%}</style>"
        f"</head><body><h1>{html.escape(title)}</h1>"
        f"<table><tr><th>method</th><th>members</th><th>rule</th></tr>{counts}</table>"
        f"<h2>Jaccard overlap</h2>{numbers['jaccard'].to_html(float_format='%.3f')}"
        f"<h2>Rank correlation of scores</h2>{correlations or '<p>fewer than two score methods</p>'}"
        f"<h2>Per-domain medians of the selections</h2>"
        f"{numbers['medians'].to_html(index=False, float_format='%.4g', na_rep='–')}"
        f"<p>PPL: {html.escape(comparison.ppl_source or 'not measured')}</p>"
        f"{_evaluations_html(numbers.get('evaluations'))}"
        f"{_paired_link(numbers.get('paired'))}"
        f"{pictures}<h2>Notes</h2><ul>{notes or '<li>none</li>'}</ul></body></html>"
    )
