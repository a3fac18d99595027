-- Rows of a chunk that did not become a candidate: their key is already a candidate (from an earlier run, file
-- or chunk of this transaction) or appears earlier in the chunk. Runs after ingest_chunk_candidates, which marks
-- the rows it inserted as is_new_candidate.
insert into duplicates (source_id, source_row, candidate_id, domain, ingest_run_id)
with chunk as (
    select
        source_id,
        source_row,
        domain,
        candidate_id,
        is_new_candidate,
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
    where not is_new_candidate
    order by source_row
)

select * from final;
