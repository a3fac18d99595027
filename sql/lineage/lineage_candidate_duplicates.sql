-- Source rows dropped as duplicates of this candidate (the first occurrence won).
with dropped as (
    select * from duplicates where candidate_id = $candidate_id
),
final as (
    select
        sources.path as source_path,
        dropped.source_row,
        dropped.ingest_run_id
    from dropped
    left join sources on sources.source_id = dropped.source_id
)
select * from final
order by source_path, source_row;
