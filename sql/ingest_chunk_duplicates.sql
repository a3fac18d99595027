-- Rows of a chunk whose key is already a candidate (from an earlier run, file or chunk of this
-- transaction) or appears earlier in the chunk. Runs before ingest_chunk_candidates.
insert into duplicates (source_id, source_row, candidate_id, domain, ingest_run_id)
with chunk as (
    select
        source_row,
        domain,
        candidate_id
    from staged_chunk
),

ranked as (
    select
        *,
        row_number() over (partition by candidate_id order by source_row) as n_seen
    from chunk
),

final as (
    select
        $source_id as source_id,
        source_row,
        candidate_id,
        domain,
        $run_id as ingest_run_id
    from ranked
    where n_seen > 1 or exists (
        select 1 from candidates where candidates.candidate_id = ranked.candidate_id
    )
    order by source_row
)

select * from final;
