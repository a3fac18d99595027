"""Prefect tasks: each a thin wrapper binding one capsel library call to the flow's store."""
