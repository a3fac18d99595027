"""Orchestration building blocks the Prefect flows compose: shards, their workers and the single writer."""
