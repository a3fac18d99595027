"""The selection report's key plots, small and inline, for the run summary (markdown with PNG data URIs)."""

from __future__ import annotations

import base64

import duckdb

from capsel.publish.report import png_bytes, report_points, scatter_figure, z_figure
from capsel.selection.plan import Selection

# Small enough that a summary with a few domains stays well under Prefect's artifact size, large
# enough to read the fit line and the cut.
FIGURE_SIZE = (5.0, 3.5)
DPI = 80
# The summary only needs the shape of the pool; the full report keeps up to report_max_points.
MAX_POINTS = 2_000
# Each domain adds ~40 KB of base64 to the artifact; past this many the report holds the rest.
MAX_DOMAINS = 12


def png_markdown(png: bytes, alt: str) -> str:
    """An inline markdown image of PNG bytes (a base64 data URI: the artifact carries the picture itself)."""
    clean_alt = alt.replace("[", "(").replace("]", ")")
    return f"![{clean_alt}](data:image/png;base64,{base64.b64encode(png).decode('ascii')})"


def summary_plots(con: duckdb.DuckDBPyConnection, selection: Selection, max_points: int = MAX_POINTS,
                  max_domains: int = MAX_DOMAINS) -> list[str]:
    """Per fitted domain, the D_late-on-D_early scatter with the fit line and the z histogram, as markdown lines.

    Only CAP selections are fitted; any other method gets no plots.
    """
    if selection.key is None or not selection.fits:
        return []
    fits = selection.fits[:max_domains]
    points = report_points(con, selection.key, [fit.domain for fit in fits], max_points)
    members = selection.members
    show_cut = selection.selector.has_cut  # a random draw has no cut, as in the full report
    lines: list[str] = []
    if len(selection.fits) > len(fits):
        lines += [f"Plots of the first {len(fits)} of {len(selection.fits)} domains; the selection's report has "
                  "every domain.", ""]
    for fit in fits:
        pool = points[points["domain"] == fit.domain]
        if pool.empty:
            continue
        chosen = members[members["domain"] == fit.domain]
        scatter = png_bytes(scatter_figure(fit, pool, chosen, size=FIGURE_SIZE), DPI)
        histogram = png_bytes(z_figure(fit.domain, pool, chosen, show_cut, size=FIGURE_SIZE), DPI)
        lines += [f"### {fit.domain}", "",
                  png_markdown(scatter, f"{fit.domain}: D_late on D_early with the fit line"), "",
                  png_markdown(histogram, f"{fit.domain}: z histogram"), ""]
    return lines
