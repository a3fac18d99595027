-- A pilot's pool: every candidate ingest kept, in id order (the draw permutes this order with its seed).
with final as (
    select
        candidate_id,
        domain,
        instruction,
        coalesce(input, '') as input,
        response
    from candidates
)

select * from final
order by candidate_id;
