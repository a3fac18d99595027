"""One function per stage (ingest, score, residualize, select and publish, compare): typed request in, summary out.

A CLI command parses options, calls the stage and renders its summary; a Prefect task calls the same
function and publishes artifacts. Neither holds policy.
"""
