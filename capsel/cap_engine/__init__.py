"""CAP scoring: greedy generation and the per-layer hidden-state divergence (docs/method.md)."""
