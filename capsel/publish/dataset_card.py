"""README.md dataset card of a published selection, written from its manifest."""

from __future__ import annotations


def dataset_card(manifest: dict) -> str:
    """Markdown card: what was selected, how, from where, and how to train on it."""
    name = manifest["selection_id"]
    model = manifest["model"]
    lines = [
        "---",
        f"pretty_name: {name}",
        "task_categories:",
        "- text-generation",
        "---",
        "",
        f"# {name}",
        "",
        f"{manifest['n_members']} supervised fine-tuning examples selected by capsel with method "
        f"`{manifest['method']}` (budget `{manifest['budget']}`, {manifest['budget_mode'].replace('_', ' ')}"
        f"{', seed ' + str(manifest['seed']) if manifest['method'] == 'random' else ''}) "
        f"from {manifest['pool']}.",
        "",
        "## Files",
        "",
        "- `data.jsonl`: alpaca format, one object per line with exactly `instruction`, `input`, `output`.",
        "- `data.parquet`: the same rows with lineage (`candidate_id`, `source_id`, `source_row`) and scores "
        "(`score` of the method, CAP's `d_early`, `d_late`, `cap`, `z`, `rank` within the domain).",
        "- `dataset_info.json`: the LlamaFactory entry; point `dataset_dir` at this folder and use "
        f"`dataset: {name}`.",
        "- `manifest.json`: ids, model, scoring config, per-domain fits, source files with sha256, code version.",
        "- `report/index.html`: per-domain plots; `gate/index.html`: the data-quality checks it passed.",
        "",
        "## Scoring",
        "",
        f"- model fingerprint: `{model.get('fingerprint')}` ({model.get('name_or_path') or 'unknown path'}, "
        f"dtype {model.get('dtype') or 'unknown'})",
        f"- scoring config: `{manifest['scoring_config']['config_hash']}`",
        f"- selection rule: {manifest['selection_rule']}",
        "",
        "## Domains",
        "",
        "| domain | candidates | excluded | pool | budget k | members | α | β | r² | cut z |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {_cell(d['domain'])} | {d['n_candidates']} | {d['n_excluded']} | {d['size']} | {d['k']} | "
            f"{d['n_members']} | {_num(d.get('alpha'))} | {_num(d.get('beta'))} | {_num(d.get('r2'))} | "
            f"{_num(d.get('z_cut'))} |"
            for d in manifest["domains"]
        ),
        "",
        *([f"- {note}" for note in manifest["notes"]] + [""] if manifest["notes"] else []),
        "## Sources",
        "",
        "| source | sha256 | members |",
        "|---|---|---:|",
        *(f"| {_cell(s['path'])} | `{s['sha256']}` | {s['n_members']} |" for s in manifest["sources"]),
        "",
        "## Provenance",
        "",
        f"- created {manifest['created_at']} by capsel {manifest['code_version']}, run `{manifest['run_id']}`",
        f"- members sha256: `{manifest['members_sha256']}`",
        "",
    ]
    return "\n".join(lines)


def _num(value: object) -> str:
    return "" if value is None else f"{value:.4g}"


def _cell(value: object) -> str:
    # a domain or path containing | would break the table
    return str(value).replace("|", "\\|")
