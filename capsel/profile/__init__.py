"""The paper's rank survey: stable rank of weights and hidden states over decoder depth (survey.py, check.py)."""
