"""One function per stage, typed request and run context in, summary out (`step.Step`): ingest, generate, score
(any method), residualize, select and publish, fine-tune, evaluate, compare; `pipeline` declares the selection and
evaluation pipelines once.

A CLI command parses options, calls one stage and renders its summary; the flows (each step a Prefect task) and
the lab run the declared pipelines. None of them holds policy.
"""
