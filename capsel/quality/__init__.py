"""Data-quality gates run before anything is published."""
