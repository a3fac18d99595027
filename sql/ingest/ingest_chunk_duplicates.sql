-- Rows of a chunk whose key is already a candidate (from an earlier run, file or chunk of this
-- transaction) or appears earlier in the chunk. Runs before ingest_chunk_candidates.
insert into duplicates (source_id, source_row, candidate_id, domain, ingest_run_id)
with chunk as (
    select
        source_id,
        source_row,
        domain,
        candidate_id,
        is_first_in_chunk,
        ingest_run_id
    from staged_chunk
),

final as (
    select
        source_id,
        source_row,
        candidate_id,
        domain,
        ingest_run_id
    from chunk
    where not is_first_in_chunk or exists (
        select 1 from candidates where candidates.candidate_id = chunk.candidate_id
    )
    order by source_row
)

select * from final;
