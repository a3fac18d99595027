"""Does a selection train a better model: fine-tuned models' held-out loss and the evaluation harness."""
