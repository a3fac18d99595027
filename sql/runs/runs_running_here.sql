-- Runs still 'running' that a process of this host started: the caller checks which pids are alive.
with final as (
    select
        run_id,
        pid
    from runs
    where status = 'running'
        and host = $host
        and pid is not null
)

select * from final;
