"""Lineage as a rich tree for the terminal (its labels quote the store as plain text: names are data)."""

from __future__ import annotations

from capsel.lineage.trace import CandidateLineage, Record, SelectionLineage
from capsel.publish.funnel import funnel_lines
from capsel.terminal_text import TextTree, markup

_PREVIEW_CHARS = 100


def lineage_tree(lineage: CandidateLineage | SelectionLineage) -> TextTree:
    """Render a candidate's or a selection's lineage as a tree."""
    if isinstance(lineage, SelectionLineage):
        return _selection_tree(lineage)
    return _candidate_tree(lineage)


def _candidate_tree(lineage: CandidateLineage) -> TextTree:
    row = lineage.candidate
    tree = TextTree(markup("[bold]candidate {}[/] (domain {})", row["candidate_id"], row["domain"]))
    text = tree.add("text")
    for field in ("instruction", "input", "response"):
        if row[field]:
            text.add(f"{field}: {_preview(row[field])}")
    if lineage.images:
        images = tree.add(f"images ({len(lineage.images)}, in <image> order)")
        for image in lineage.images:
            images.add(f"{image['position']}. sha256 {image['sha256']}: {image['format']} {image['width']}x"
                       f"{image['height']}, {image['n_bytes']:,} bytes, {image['path']}")
    source = tree.add("source")
    source.add(f"file {row['source_path']}, row {row['source_row']}")
    source.add(f"sha256 {row['source_sha256']}")
    source.add(f"ingest run {row['ingest_run_id']} ({row['ingest_status']}, code {row['ingest_code_version']})")
    if lineage.duplicates:
        dups = tree.add(f"{len(lineage.duplicates)} duplicate row(s) dropped in its favour")
        for dup in lineage.duplicates[:10]:
            dups.add(f"{dup['source_path']} row {dup['source_row']}")
    generations = tree.add(f"generations ({len(lineage.generations)})")
    for gen in lineage.generations:
        status = gen["excluded_reason"] or f"{gen['n_generated_tokens']} tokens"
        generations.add(
            f"model {gen['model_fingerprint']} config {gen['config_hash']} via {gen['generator']}: {status}; "
            + _run_ref(gen, "generation")
        )
    scores = tree.add(f"scores ({len(lineage.scores)})")
    for score in lineage.scores:
        scores.add(_score_line(score))
    if lineage.baseline_scores:
        baselines = tree.add(f"baseline scores ({len(lineage.baseline_scores)})")
        for score in lineage.baseline_scores:
            baselines.add(_baseline_line(score))
    selections = tree.add(f"selections ({len(lineage.selections)})")
    for sel in lineage.selections:
        selections.add(
            f"{sel['selection_id']}: {sel['method']} budget {sel['budget']}, rank {sel['rank']}, "
            f"z {_num(sel['z'])} → {sel['out_dir']}"
        )
    return tree


def _score_line(score: Record) -> str:
    head = (
        f"model {score['model_fingerprint']} ({score['model_name']}, {score['model_dtype']}), "
        f"config {score['config_hash']} {score['scoring_config']}"
    )
    if score["excluded_reason"]:
        body = f"excluded: {score['excluded_reason']}"
    else:
        body = (
            f"D_early {_num(score['d_early'])}, D_late {_num(score['d_late'])}, n {score['n_aligned']}, "
            f"PPL {_num(score['ppl'])}, CAP {_num(score['cap'])}, z {_num(score['z'])}"
        )
    return f"{head}: {body}; {_run_ref(score, 'score')}"


def _run_ref(row: Record, prefix: str) -> str:
    """'run X (status)', naming the parent run of a shard and the Prefect flow run when there is one."""
    text = f"run {row[f'{prefix}_run_id']} ({row[f'{prefix}_run_status']})"
    if row.get(f"{prefix}_run_kind") == "score_shard":
        text = f"shard {text} of score run {row[f'{prefix}_parent_run_id']}"
    flow_run = row.get(f"{prefix}_prefect_flow_run_id")
    return f"{text}, prefect flow run {flow_run}" if flow_run else text


def _baseline_line(score: Record) -> str:
    value = f"excluded: {score['excluded_reason']}" if score["excluded_reason"] else f"score {_num(score['score'])}"
    if score["excluded_reason"] and score["score"] is not None:
        value += f" (score {_num(score['score'])})"
    return (
        f"{score['method']}: scorer {score['model_fingerprint']} ({score['model_name']}), "
        f"config {score['config_hash']}: {value}; run {score['score_run_id']} ({score['score_run_status']})"
    )


def _selection_tree(lineage: SelectionLineage) -> TextTree:
    sel = lineage.selection
    tree = TextTree(markup("[bold]selection {}[/]: {}, budget {} ({}), {} members", sel["selection_id"],
                           sel["method"], sel["budget"], sel["budget_mode"], sel["n_members"]))
    tree.add(f"published at {sel['out_dir']} on {sel['created_at']}")
    tree.add(f"model {sel['model_fingerprint']} ({sel['model_name']}, {sel['model_dtype']})")
    tree.add(f"scoring config {sel['config_hash']} {sel['scoring_config']}")
    tree.add(
        f"select run {sel['select_run_id']} ({sel['select_run_status']}, code {sel['select_code_version']}, "
        f"prefect flow run {sel['select_prefect_flow_run_id'] or '-'}, flow run {sel['select_parent_run_id'] or '-'})"
    )
    sources = tree.add(f"sources ({len(lineage.sources)})")
    for src in lineage.sources:
        sources.add(f"{src['source_path']} sha256 {src['source_sha256']}: {src['n_members']} members")
    runs = tree.add(f"runs behind the members ({len(lineage.runs)})")
    for run in lineage.runs:
        shards = f" in {run['n_shards']} shards" if run["n_shards"] else ""
        members = f": {run['n_members']} members{shards}" if run["n_members"] is not None else ""
        runs.add(
            f"{run['kind']} {run['run_id']} ({run['status']}, code {run['code_version']}, "
            f"prefect flow run {run['prefect_flow_run_id'] or '-'}){members}"
        )
    if lineage.finetunes:
        _finetune_branch(tree, lineage.finetunes)
    if lineage.funnel:
        funnel = tree.add("funnel: rows read down to members (the dropped rows: excluded.parquet beside it)")
        for line in funnel_lines(lineage.funnel):
            funnel.add(line)
    return tree


def _finetune_branch(tree: TextTree, records: list[Record]) -> None:
    """One branch per model fine-tuned on the selection, with its evaluations' overall metrics under it."""
    by_id: dict[str, list[Record]] = {}
    for record in records:
        by_id.setdefault(record["finetune_id"], []).append(record)
    branch = tree.add(f"fine-tuned models ({len(by_id)})")
    for finetune_id, rows in by_id.items():
        first = rows[0]
        model = branch.add(
            f"{finetune_id}: {first['base_model']} ({first['base_fingerprint']}), {first['profile']} "
            f"profile, config {first['config_hash']}, seed {first['seed']}, {first['trainer']}, run "
            f"{first['run_id']}, at {first['model_dir']}"
        )
        for row in rows:
            if row["metric"] is not None:
                model.add(f"{row['eval_spec']}: {row['metric']} {_num(row['value'])} (n {row['n']})")


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _PREVIEW_CHARS else flat[: _PREVIEW_CHARS - 1] + "…"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"
