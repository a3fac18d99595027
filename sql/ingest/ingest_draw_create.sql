-- `ingest --sample`: per domain, this run's new candidates beyond the $sample_size smallest
-- draw keys. The key is sha256(seed, U+001F, candidate_id): a fixed function of the id, so the
-- draw is the same on every machine, chunk size and file order. Ties (never seen) go by id.
create or replace temp table ingest_not_drawn as
with new_candidates as (
    select
        candidate_id,
        domain,
        sha256(cast($seed as varchar) || chr(31) || candidate_id) as draw_key
    from candidates
    where ingest_run_id = $run_id
),

ranked as (
    select
        candidate_id,
        row_number() over (partition by domain order by draw_key, candidate_id) as draw_rank
    from new_candidates
),

final as (
    select candidate_id
    from ranked
    where draw_rank > $sample_size
)

select * from final;
