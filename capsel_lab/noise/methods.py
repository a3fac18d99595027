"""The rankings the noise lab compares and how it names them (no numpy or pandas: commands name them in --help)."""

from __future__ import annotations

# "known"/"learnable": the synthetic world's clean facts; "clean": a real pool's rows.
CLEAN_LABELS = ("known", "learnable", "clean")
# Column each method ranks by, highest first: a PPL-top selection, a CAP-top selection, and CAP-top among the
# candidates the PPL guard leaves eligible (`z_guard`: z, or -inf where the guard holds the candidate back).
METHOD_COLUMNS = {"ppl": "ppl", "cap": "z", "cap_guard": "z_guard"}
METHOD_NAMES = {"ppl": "PPL (high first)", "cap": "CAP z (high first)", "cap_guard": "CAP z with PPL guard"}
