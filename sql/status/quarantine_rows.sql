-- Quarantined rows with their file, filtered by reason and by source (its path or source id), in file
-- order; `n_matching` counts every match, so a listing cut by $limit can say how many it left out.
with matching as (
    select
        sources.path,
        quarantine.source_id,
        quarantine.source_row,
        quarantine.domain,
        quarantine.reason,
        quarantine.detail,
        quarantine.raw_text,
        quarantine.ingest_run_id
    from quarantine
    inner join sources on sources.source_id = quarantine.source_id
    where (cast($reason as varchar) is null or quarantine.reason = $reason)
        and (cast($source as varchar) is null or sources.path = $source or sources.source_id = $source)
),

final as (
    select
        *,
        count(*) over () as n_matching
    from matching
    order by path, source_row
    limit $limit
)

select * from final;
