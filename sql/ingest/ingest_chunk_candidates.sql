-- First occurrence of each new key in a chunk becomes a candidate, texts exactly as given; returns the ids it
-- inserted, so the rest of the chunk are its duplicates (ingest_chunk_duplicates).
insert into candidates (
    candidate_id, domain, instruction, input, response, dedup_key, source_id, source_row, ingest_run_id,
    image_sha256
)
with chunk as (
    select * from staged_chunk
),

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
    where is_first_in_chunk
    order by source_row
)

select * from final
-- A key already stored (from an earlier run, file or chunk of this transaction) is found by the primary key's
-- index, one lookup per row; a join against candidates would read every stored candidate for each chunk, so
-- ingest would slow down as the store grows. DuckDB's conflict path may store a row of the chunk out of source
-- order (the rows themselves are the same); nothing reads candidates in storage order (the sample draw goes by id).
on conflict do nothing
returning candidate_id;
