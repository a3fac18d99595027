-- Seconds the database's finished top-level runs took, summed: the work recorded in it, without the idle time
-- between runs (a lab resumed the next day) and without what a kill interrupted (such a run has no finish).
with top_level as (
    select epoch(finished_at - started_at) as run_s
    from runs
    where parent_run_id is null
        and finished_at is not null
),

final as (
    select
        coalesce(sum(run_s), 0) as recorded_s,
        count(*) as n_runs
    from top_level
)

select * from final;
