-- Each run as lineage names it: its status, kind and code, the run above it (a shard's scoring run, a stage's
-- flow run), and the Prefect flow run behind it: its own, or else its parent's.
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
        runs.parent_run_id,
        coalesce(runs.prefect_flow_run_id, parents.prefect_flow_run_id) as prefect_flow_run_id
    from runs
    left join parents on parents.run_id = runs.parent_run_id
)

select * from final;
