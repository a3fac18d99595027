-- Each run as lineage shows it: kind, status, code, model, the Prefect flow run behind it (its own, or else its
-- parent's), the run above it (a shard's scoring run, a stage's flow run) and when it ran.
create or replace view run_origins as
with parents as (
    select
        run_id,
        prefect_flow_run_id
    from runs
),

final as (
    select
        runs.run_id,
        runs.kind,
        runs.status,
        runs.code_version,
        runs.model_fingerprint,
        coalesce(runs.prefect_flow_run_id, parents.prefect_flow_run_id) as prefect_flow_run_id,
        runs.parent_run_id,
        runs.started_at,
        runs.finished_at
    from runs
    left join parents on parents.run_id = runs.parent_run_id
)

select * from final;
