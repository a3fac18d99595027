-- Source files behind a selection's members, with how many members each contributed.
with members as (
    select candidate_id from selection_members where selection_id = $selection_id
),
final as (
    select
        sources.source_id,
        sources.path as source_path,
        sources.sha256 as source_sha256,
        sources.ingest_run_id,
        count(*) as n_members
    from members
    join candidates on candidates.candidate_id = members.candidate_id
    join sources on sources.source_id = candidates.source_id
    group by all
)
select * from final
order by source_path;
