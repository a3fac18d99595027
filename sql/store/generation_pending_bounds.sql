-- The last candidate id of each page of the candidates in scope with no y-hat yet for this model and generation
-- config, pages of $page_size in candidate-id order, at most $n_limit candidates in all (null: no cap).
with in_scope as (
    select candidate_id
    from candidates_in_scope($domain, '')
),

generated as (
    select candidate_id
    from generations
    where model_fingerprint = $model_fingerprint
        and config_hash = $generation_hash
),

pending as (
    select
        in_scope.candidate_id,
        row_number() over (order by in_scope.candidate_id) as n_through,
        count(*) over () as n_pending
    from in_scope
    anti join generated on in_scope.candidate_id = generated.candidate_id
),

final as (
    select candidate_id as upto_candidate_id
    from pending
    where n_through <= coalesce($n_limit, n_pending)
        and (n_through % $page_size = 0 or n_through = least(coalesce($n_limit, n_pending), n_pending))
    order by candidate_id
)

select * from final
