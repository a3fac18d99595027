"""CAP's engine: greedy y-hat and the per-layer hidden-state divergence (docs/method.md), and the text
inputs every scorer shares."""
