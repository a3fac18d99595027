-- The last candidate id of each page of the candidates in scope with no result yet for ($method, model, config),
-- pages of $page_size in candidate-id order, at most $n_limit candidates in all (null: no cap). One sort per run:
-- each page then reads only its own id window instead of everything above its cursor.
with pending as (
    select
        candidate_id,
        row_number() over (order by candidate_id) as n_through,
        count(*) over () as n_pending
    from candidates_pending($domain, '', null, $method, $model_fingerprint, $config_hash)
),

final as (
    select candidate_id as upto_candidate_id
    from pending
    where n_through <= coalesce($n_limit, n_pending)
        and (n_through % $page_size = 0 or n_through = least(coalesce($n_limit, n_pending), n_pending))
    order by candidate_id
)

select * from final
