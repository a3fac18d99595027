-- First occurrence of each new key in a chunk becomes a candidate, texts exactly as given.
-- The first row is found on the two small columns, then joined back: ranking whole rows would
-- drag every text through the aggregate.
insert into candidates (
    candidate_id, domain, instruction, input, response, dedup_key, source_id, source_row, ingest_run_id
)
with chunk as (
    select * from staged_chunk
),

first_seen as (
    select
        candidate_id,
        min(source_row) as source_row
    from chunk
    group by candidate_id
),

-- not exists (an anti join the planner builds on the chunk) rather than not in (a mark join
-- that rebuilds a hash table of every candidate for each chunk).
new_keys as (
    select *
    from first_seen
    where not exists (
        select 1 from candidates where candidates.candidate_id = first_seen.candidate_id
    )
),

final as (
    select
        chunk.candidate_id,
        chunk.domain,
        chunk.instruction,
        chunk.input,
        chunk.response,
        chunk.dedup_key,
        $source_id as source_id,
        chunk.source_row,
        $run_id as ingest_run_id
    from chunk
    inner join new_keys using (candidate_id, source_row)
    order by chunk.source_row
)

select * from final;
