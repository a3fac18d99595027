"""The gate's report: `validation.json` (GX's results) and a self-contained `index.html` read offline.

GX Data Docs load their styles and scripts from CDNs and weigh 4.2 MB per selection; this page
has inline CSS only, no script and no URL outside its folder, and every data-derived string escaped.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any, Mapping

import orjson

VALIDATION_FILE = "validation.json"
INDEX_FILE = "index.html"
# lists longer than this (a domain set, a column set) make an argument unreadable; validation.json has them whole
MAX_LIST_ARGUMENT = 8
MAX_EXAMPLES = 5
# nothing may load: no script, no image, no font, no fetch; only the inline style below
CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

_STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#1d232a;max-width:1400px}
h1{font-size:20px;margin:0 0 6px}h2{font-size:16px;margin:28px 0 8px}
.verdict{display:inline-block;padding:3px 10px;border-radius:4px;font-weight:600;color:#fff}
.pass{background:#1a7f37}.fail{background:#cf222e}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 14px;margin:12px 0}dt{color:#57606a}dd{margin:0}
table{border-collapse:collapse;width:100%}th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;
vertical-align:top}th{background:#f6f8fa}tr.failed td{background:#ffebe9}
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;word-break:break-word}
td.ok{color:#1a7f37;font-weight:600}td.bad{color:#cf222e;font-weight:600}
"""


def write_gate_report(directory: Path, run_name: str, run_time: str, results: Mapping[str, Any]) -> Path:
    """Write `validation.json` and `index.html` for GX suite results by table; returns the index path."""
    directory.mkdir(parents=True, exist_ok=True)
    validation = {
        "run_name": run_name,
        "run_time": run_time,
        "success": all(result.success for result in results.values()),
        "tables": {table: result.to_json_dict() for table, result in results.items()},
    }
    # orjson writes NaN and inf as null: the file stays strict JSON, and the page shows what the file holds
    document = orjson.dumps(validation, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY, default=str)
    (directory / VALIDATION_FILE).write_bytes(document)
    index = directory / INDEX_FILE
    index.write_text(render_html(orjson.loads(document)), encoding="utf-8")
    return index


def render_html(validation: Mapping[str, Any]) -> str:
    """The report page for a `validation.json` document."""
    tables = validation["tables"]
    outcomes = [outcome for result in tables.values() for outcome in result["results"]]
    n_failed = sum(not outcome["success"] for outcome in outcomes)
    verdict = "passed" if validation["success"] else "failed"
    run_name = _text(validation["run_name"])
    facts = {
        "selection (run name)": run_name,
        "run time": _text(validation.get("run_time")),
        "expectations": f"{len(outcomes)} evaluated, {len(outcomes) - n_failed} passed, {n_failed} failed",
        "machine-readable": f"<a href='{VALIDATION_FILE}'>{VALIDATION_FILE}</a>",
    }
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>data-quality gate: {run_name}</title><style>{_STYLE}</style></head><body>"
        f"<h1>Data-quality gate: {run_name}</h1>"
        f"<span class='verdict {'pass' if validation['success'] else 'fail'}' id='verdict'>{verdict}</span>"
        f"<dl>{''.join(f'<dt>{key}</dt><dd>{value}</dd>' for key, value in facts.items())}</dl>"
        f"{''.join(_table_section(table, result) for table, result in tables.items())}"
        "</body></html>"
    )


def expectation_arguments(kwargs: Mapping[str, Any]) -> str:
    """An expectation's arguments in one line, without GX's batch id and long lists."""
    return ", ".join(
        f"{name}={value!r}" for name, value in kwargs.items()
        if name != "batch_id" and not (isinstance(value, list) and len(value) > MAX_LIST_ARGUMENT)
    )


def outcome_detail(outcome: Mapping[str, Any]) -> str:
    """What an expectation saw: its error, its unexpected count with examples, or its observed value."""
    result = outcome.get("result") or {}
    exception = outcome.get("exception_info") or {}
    if exception.get("raised_exception"):
        return f"error: {exception.get('exception_message')}"
    if "unexpected_count" in result:
        of = f" of {result['element_count']}" if "element_count" in result else ""
        if not result["unexpected_count"]:
            return f"0 unexpected{of}"
        examples = result.get("partial_unexpected_index_list") or result.get("partial_unexpected_list") or []
        return f"{result['unexpected_count']} unexpected{of}, e.g. {_json(examples[:MAX_EXAMPLES])}"
    return f"observed {_json(result.get('observed_value'))}"


def _table_section(table: str, result: Mapping[str, Any]) -> str:
    stats = result.get("statistics", {})
    rows = "".join(
        f"<tr class='{'passed' if outcome['success'] else 'failed'}'><td>{number}</td>"
        f"<td><code>{_text(outcome['expectation_config']['type'])}</code></td>"
        f"<td><code>{_text(expectation_arguments(outcome['expectation_config']['kwargs']))}</code></td>"
        f"<td class='{'ok' if outcome['success'] else 'bad'}'>{'pass' if outcome['success'] else 'FAIL'}</td>"
        f"<td><code>{_text(outcome_detail(outcome))}</code></td></tr>"
        for number, outcome in enumerate(result["results"], 1)
    )
    return (
        f"<h2 id='table-{_text(table)}'>{_text(table)}: {stats.get('successful_expectations', 0)} of "
        f"{stats.get('evaluated_expectations', 0)} passed</h2>"
        "<table><thead><tr><th>#</th><th>expectation</th><th>arguments</th><th>result</th>"
        f"<th>observed / unexpected</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _text(value: object) -> str:
    return escape("" if value is None else str(value), quote=True)


def _json(value: object) -> str:
    return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY, default=str).decode()
