"""CAP scoring: greedy generation and the per-layer hidden-state divergence (DESIGN.md, "The method")."""
