-- The candidate scope every pending, progress and planning query shares: the candidates of one domain
-- (or all, for a null domain) with ids after a keyset cursor ('' for the first page).
create or replace macro candidates_in_scope(scope_domain, after_candidate_id) as table
with final as (
    select
        candidate_id,
        domain,
        instruction,
        input,
        response
    from candidates
    where (cast(scope_domain as varchar) is null or domain = scope_domain)
        and candidate_id > after_candidate_id
)

select * from final;
