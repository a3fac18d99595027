"""LESS baseline (Xia et al.): LoRA gradient features compressed by CountSketch, scored by cosine to a target set."""
