-- The one definition of "pending": the candidates in scope (one domain, or all for a null domain) with no result
-- yet for (method, model, config) by results_done, inside the id window (after_candidate_id, upto_candidate_id]
-- ('' and null: every id). Both sides are read inside the window only, so a page reads its own ids alone.
-- Paging bounds, each page and progress all read it.
create or replace macro candidates_pending(
    scope_domain, after_candidate_id, upto_candidate_id, done_method, done_model_fingerprint, done_config_hash
) as table
with in_scope as (
    select candidate_id, domain, instruction, input, response
    from candidates_in_scope(scope_domain, after_candidate_id)
    where cast(upto_candidate_id as varchar) is null or candidate_id <= upto_candidate_id
),

done as (
    select candidate_id
    from results_done(done_method, done_model_fingerprint, done_config_hash)
    where candidate_id > after_candidate_id
        and (cast(upto_candidate_id as varchar) is null or candidate_id <= upto_candidate_id)
),

final as (
    select
        in_scope.candidate_id,
        in_scope.domain,
        in_scope.instruction,
        in_scope.input,
        in_scope.response
    from in_scope
    anti join done on in_scope.candidate_id = done.candidate_id
)

select * from final;
