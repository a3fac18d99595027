"""The paper's noise-rejection experiment: where injected junk ranks under PPL and under CAP."""
