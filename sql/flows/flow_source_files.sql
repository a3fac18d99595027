-- The sha256 of source files by source id (files a flow ingested or found already ingested).
with wanted as (
    select unnest($source_ids::varchar[]) as source_id
),
final as (
    select
        sources.source_id,
        sources.path,
        sources.sha256
    from wanted
    join sources on sources.source_id = wanted.source_id
)
select * from final
order by source_id;
