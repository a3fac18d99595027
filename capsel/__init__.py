"""capsel: model-aware SFT data selection with CAP (Counterfactual Assimilation Profile)."""

__version__ = "0.1.0"
