-- Per-domain outcome counts of one ingest run; n_read is their sum, checked per file in Python.
with outcomes as (
    select domain, 'inserted' as outcome from candidates where ingest_run_id = $run_id
    union all
    select domain, 'duplicate' as outcome from duplicates where ingest_run_id = $run_id
    union all
    select coalesce(domain, '(none)') as domain, 'quarantined' as outcome from quarantine where ingest_run_id = $run_id
    union all
    select domain, 'sampled_out' as outcome from sampled_out where ingest_run_id = $run_id
),

per_domain as (
    select
        domain,
        count(*) filter (where outcome = 'inserted') as n_inserted,
        count(*) filter (where outcome = 'duplicate') as n_duplicates,
        count(*) filter (where outcome = 'quarantined') as n_quarantined,
        count(*) filter (where outcome = 'sampled_out') as n_sampled_out
    from outcomes
    group by domain
),

final as (
    select
        domain,
        n_inserted + n_duplicates + n_quarantined + n_sampled_out as n_read,
        n_inserted,
        n_duplicates,
        n_quarantined,
        n_sampled_out
    from per_domain
    order by domain
)

select * from final;
