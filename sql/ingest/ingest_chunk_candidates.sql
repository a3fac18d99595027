-- First occurrence of each new key in a chunk becomes a candidate, texts exactly as given.
insert into candidates (
    candidate_id, domain, instruction, input, response, dedup_key, source_id, source_row, ingest_run_id,
    image_sha256
)
with chunk as (
    select * from staged_chunk
),

-- not exists (an anti join the planner builds on the chunk) rather than not in (a mark join
-- that rebuilds a hash table of every candidate for each chunk).
final as (
    select
        candidate_id,
        domain,
        instruction,
        input,
        response,
        dedup_key,
        source_id,
        source_row,
        ingest_run_id,
        list_transform(stored_images, lambda image: image.sha256) as image_sha256
    from chunk
    where is_first_in_chunk and not exists (
        select 1 from candidates where candidates.candidate_id = chunk.candidate_id
    )
    order by source_row
)

select * from final;
