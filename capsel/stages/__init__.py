"""One function per stage, typed request and run context in, summary out: ingest, score (any method),
residualize, select and publish, compare.

A CLI command parses options, calls the stage and renders its summary; a Prefect task calls the same
function and publishes artifacts. Neither holds policy.
"""
