"""Does a selection train a better model: held-out loss of fine-tuned models, and lm-evaluation-harness runs."""
