"""The selection report: per-domain scatter and z histogram as PNG, gathered in report/index.html."""

from __future__ import annotations

import hashlib
import html
import io
import re
from pathlib import Path
from typing import Sequence

import duckdb
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from capsel.db import run_sql
from capsel.safe_text import html_text
from capsel.selection.pinned_scores import pinned_cap_scores
from capsel.selection.residualize import DomainFit
from capsel.selection.scoring_key import ScoringKey


def report_points(
    con: duckdb.DuckDBPyConnection, key: ScoringKey, domains: Sequence[str], max_points: int
) -> pd.DataFrame:
    """Scored pool points to plot: at most `max_points` per domain (a stable sample), with the pool size."""
    with pinned_cap_scores(con, key):
        return run_sql(con, "publish/report_points", {
            "model_fingerprint": key.model_fingerprint,
            "config_hash": key.config_hash,
            "domains": list(domains),
            "max_points": int(max_points),
            **key.layer_params(),
        }).df()


def write_report(
    directory: Path,
    title: str,
    summary: Sequence[dict],
    members: pd.DataFrame,
    points: pd.DataFrame | None,
    fits: Sequence[DomainFit],
    show_cut: bool,
    max_points: int,
) -> list[Path]:
    """Write the PNGs and index.html into `directory`; return every file written.

    `summary` holds one dict per domain (the manifest's domain entries); `points` is None for an
    unscored pool, which gets the summary table only.
    """
    directory.mkdir(parents=True, exist_ok=True)
    written, sections = [], []
    for fit in fits:
        pool = points[points["domain"] == fit.domain] if points is not None else None
        if pool is None or pool.empty:
            continue
        chosen = _at_most(members[members["domain"] == fit.domain], max_points)
        stem = _file_stem(fit.domain)
        scatter = directory / f"{stem}-scatter.png"
        _save(scatter_figure(fit, pool, chosen), scatter)
        histogram = directory / f"{stem}-z.png"
        _save(z_figure(fit.domain, pool, chosen, show_cut), histogram)
        written += [scatter, histogram]
        sampled = int(pool["n_pool"].iloc[0]) > len(pool)
        sections.append(_section(fit, scatter.name, histogram.name, sampled, len(pool)))
    index = directory / "index.html"
    index.write_text(_page(title, summary, sections), encoding="utf-8")
    return [*written, index]


def scatter_figure(fit: DomainFit, pool: pd.DataFrame, chosen: pd.DataFrame,
                   size: tuple[float, float] = (6.4, 4.8)) -> Figure:
    """D_late against D_early of the pool and the selected, with the domain's OLS line."""
    figure = Figure(figsize=size, layout="constrained")
    axes = figure.add_subplot()
    axes.scatter(pool["d_early"], pool["d_late"], s=6, c="#9aa5b1", alpha=0.6, label="pool", linewidths=0)
    axes.scatter(chosen["d_early"], chosen["d_late"], s=10, c="#d6452b", label="selected", linewidths=0)
    xs = np.linspace(pool["d_early"].min(), pool["d_early"].max(), 50)
    alpha, beta = float(fit.alpha or 0.0), float(fit.beta or 0.0)  # a fitted domain has both
    axes.plot(xs, alpha + beta * xs, c="#1f3b73", lw=1.5,
              label=f"OLS: {fit.alpha:.3g} + {fit.beta:.3g}·D_early (r²={fit.r2:.3f})")
    axes.set_xlabel("D_early")
    axes.set_ylabel("D_late")
    # a domain is data: "$...$" in it is text, not TeX that could fail the publish (parse_math=False)
    axes.set_title(f"{fit.domain}: D_late on D_early (n={fit.n_eligible})", parse_math=False)
    axes.legend(loc="best", fontsize=8)
    return figure


def z_figure(domain: str, pool: pd.DataFrame, chosen: pd.DataFrame, show_cut: bool,
             size: tuple[float, float] = (6.4, 4.0)) -> Figure:
    """Histogram of z, the selected stacked on the rest of the pool, with the cut when `show_cut`."""
    figure = Figure(figsize=size, layout="constrained")
    axes = figure.add_subplot()
    # Stacked, so each candidate is drawn once and in its own colour; the edges cover the members too, since
    # the pool is a sample that need not hold the top member.
    rest = pool[~pool["candidate_id"].isin(chosen["candidate_id"])]
    bins = np.histogram_bin_edges(np.concatenate([rest["z"], chosen["z"]]), bins="auto").tolist()
    axes.hist([rest["z"], chosen["z"]], bins=bins, stacked=True, color=["#9aa5b1", "#d6452b"],
              label=["rest of the pool", "selected"])
    if show_cut and len(chosen):
        cut = float(chosen["z"].min())
        axes.axvline(cut, color="#1f3b73", ls="--", lw=1.5, label=f"cut z = {cut:.3f}")
    axes.set_xlabel("z (CAP standardised within the domain)")
    axes.set_ylabel("candidates")
    axes.set_title(f"{domain}: z", parse_math=False)
    axes.legend(loc="best", fontsize=8)
    return figure


def png_bytes(figure: Figure, dpi: int) -> bytes:
    """The figure as PNG bytes (Agg: no display needed)."""
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def _save(figure: Figure, path: Path) -> None:
    path.write_bytes(png_bytes(figure, dpi=110))


def _at_most(frame: pd.DataFrame, limit: int) -> pd.DataFrame:
    return frame if len(frame) <= limit else frame.sample(n=limit, random_state=0)


def _file_stem(domain: str) -> str:
    # domains are user data: keep file names safe and distinct even when two slugs collide
    slug = re.sub(r"[^a-z0-9]+", "-", domain.lower()).strip("-")[:40] or "domain"
    return f"{slug}-{hashlib.sha256(domain.encode()).hexdigest()[:6]}"


def _section(fit: DomainFit, scatter: str, histogram: str, sampled: bool, n_plotted: int) -> str:
    note = f"<p>Plots show a stable sample of {n_plotted} pool points.</p>" if sampled else ""
    return (
        f"<section><h2>{html_text(fit.domain)}</h2>{note}"
        f'<img src="{scatter}" alt="D_early vs D_late for {html_text(fit.domain)}">'
        f'<img src="{histogram}" alt="z histogram for {html_text(fit.domain)}"></section>'
    )


def _page(title: str, summary: Sequence[dict], sections: Sequence[str]) -> str:
    columns = ["domain", "n_candidates", "n_excluded", "size", "k", "n_members", "alpha", "beta", "r2", "z_cut"]
    head = "".join(f"<th>{name}</th>" for name in columns)
    rows = "".join(
        "<tr>" + "".join(f"<td>{html_text(_cell(entry.get(name)))}</td>" for name in columns) + "</tr>"
        for entry in summary
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}img{max-width:48%;margin:4px}</style>"
        f"</head><body><h1>{html.escape(title)}</h1><table><tr>{head}</tr>{rows}</table>"
        f"{''.join(sections)}<p><a href='../gate/index.html'>data-quality gate report</a></p></body></html>"
    )


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
