"""What a store holds, free of run ids and timestamps, so a killed-and-rerun store compares to an uninterrupted one."""

from __future__ import annotations

from pathlib import Path

from capsel.db import open_db

# Every table's content that a rerun must reproduce: columns chosen to leave out run ids and clocks.
CONTENT = {
    "sources": "source_id, path, sha256, n_bytes, n_rows_read, n_inserted, n_duplicates, n_quarantined, "
               "n_sampled_out",
    "candidates": "candidate_id, domain, instruction, input, response, dedup_key, source_id, source_row",
    "duplicates": "source_id, source_row, candidate_id, domain",
    "quarantine": "source_id, source_row, domain, raw_text, reason, detail",
    "sampled_out": "source_id, source_row, candidate_id, domain",
    "models": "model_fingerprint, name_or_path, dtype, architecture, n_layers",
    "scoring_configs": "config_hash, config, generation_hash",
    "generations": "candidate_id, model_fingerprint, config_hash, prompt_ids, response_ids, generated_ids, "
                   "excluded_reason, generator",
    "divergences": "candidate_id, model_fingerprint, config_hash, n_aligned, layer_divergence, d_early, d_late, ppl, "
                   "excluded_reason",
    "evaluations": "target, model_fingerprint, eval_kind, eval_file_sha256, eval_config_hash, domain, metric, value, "
                   "n, tokens, ci_low, ci_high, ci_resamples",
    "evaluation_rows": "model_fingerprint, eval_kind, eval_file_sha256, eval_config_hash, metric, row_index, domain, "
                       "outcome, weight",
    "evaluation_sets": "model_fingerprint, eval_kind, eval_file_sha256, eval_config_hash, n_results, n_rows",
}
# The key of every table that has one: no row may appear twice under it.
KEYS = {
    "sources": "source_id", "candidates": "candidate_id", "duplicates": "source_id, source_row",
    "quarantine": "source_id, source_row", "sampled_out": "source_id, source_row",
    "generations": "candidate_id, model_fingerprint, config_hash",
    "divergences": "candidate_id, model_fingerprint, config_hash", "runs": "run_id",
    "selections": "selection_id", "selection_members": "selection_id, candidate_id",
    "evaluations": "model_fingerprint, eval_kind, eval_file_sha256, eval_config_hash, domain, metric",
    "evaluation_rows": "model_fingerprint, eval_kind, eval_file_sha256, eval_config_hash, metric, row_index",
}


def store_state(db: Path) -> dict[str, list[tuple]]:
    """Sorted content rows of every table in CONTENT, plus the members of the newest published selection."""
    con = open_db(db, read_only=True)
    try:
        state = {table: sorted(con.execute(f"select {columns} from {table}").fetchall(), key=repr)
                 for table, columns in CONTENT.items()}
        state["latest_selection_members"] = con.execute(
            "select domain, rank, candidate_id, score, z from selection_members where selection_id = ("
            "select selection_id from selections where status = 'published' "
            "order by created_at desc, selection_id desc limit 1) order by domain, rank").fetchall()
    finally:
        con.close()
    return state


def duplicate_keys(db: Path) -> dict[str, int]:
    """Per table, how many rows repeat a key (empty when none do)."""
    con = open_db(db, read_only=True)
    try:
        repeats = {table: con.execute(f"select count(*) - count(distinct ({key})) from {table}").fetchone()[0]
                   for table, key in KEYS.items()}
    finally:
        con.close()
    return {table: n for table, n in repeats.items() if n}


def selection_rows(db: Path) -> list[tuple[str, str, str]]:
    """(selection_id, status, out_dir) of every selection row."""
    con = open_db(db, read_only=True)
    try:
        return con.execute("select selection_id, status, out_dir from selections order by selection_id").fetchall()
    finally:
        con.close()
