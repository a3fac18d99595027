"""The one table from a parameter's field name to the command-line flag that sets it."""

from __future__ import annotations

FLAGS = {
    "path": "--model", "model": "--model", "dtype": "--dtype", "device": "--device",
    "trust_remote_code": "--trust-remote-code", "allow_pickle": "--allow-pickle", "prompt_format": "--prompt-format",
    "prompt_tokens": "--prompt-tokens", "horizon": "--horizon", "early": "--early", "late": "--late",
    "min_prompt_tokens": "--min-prompt-tokens", "min_response_tokens": "--min-response-tokens",
    "batch_size": "--batch-size", "max_length": "--max-length", "rater": "--rater", "rater_label": "--rater-label",
    "encoder": "--encoder", "target": "--target", "target_max": "--target-max", "budget": "--budget",
    "method": "--method", "ppl_guard": "--ppl-guard", "ppl_guard_z": "--ppl-guard-z", "shard_size": "--shard-size",
    "threads": "--threads",
    "num_gpus": "--num-gpus", "paths": "--input", "field_map": "--map", "domain": "--domain",
    "domains": "--domain", "sample_size": "--sample", "generator": "--generator", "db_path": "--db",
    "config_hash": "--config-hash", "out": "--out", "n_clean": "--n-clean", "junk_share": "--junk-share",
    "verify": "--no-verify", "eval": "--eval", "profile": "--profile", "order": "--ppl-direction",
    # where a flow's parameters hold two fields of one name, the dotted path tells them apart
    "sources.domain": "--ingest-domain", "runner.kind": "--runner",
}
# A switch's two flags, where the off one is not --no-<name>.
SWITCHES = {"total": "--total/--per-domain"}


def flag(field: str) -> str:
    """The flag that sets `field`: the table's for the dotted path, else for its last part, else --field-name."""
    name = field.rsplit(".", 1)[-1]
    return FLAGS.get(field) or FLAGS.get(name) or f"--{name.replace('_', '-')}"


def switch(field: str) -> str:
    """A boolean field's on/off flags, e.g. --reingest/--no-reingest."""
    name = field.rsplit(".", 1)[-1]
    on = flag(field)
    return SWITCHES.get(name) or f"{on}/--no-{on[2:]}"
