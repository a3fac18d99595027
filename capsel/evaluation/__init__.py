"""Evaluating trained models: lm-evaluation-harness runs (GSM8K, HumanEval) and the pieces around them."""
