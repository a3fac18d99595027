"""Prefect flows: composition of the capsel library steps (select_flow, rescore_flow)."""
