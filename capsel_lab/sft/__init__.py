"""The paper's main comparison in miniature: fine-tune on CAP-top vs random subsets, test on held-out questions."""
