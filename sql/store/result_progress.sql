-- How much of the scope already has a result for ($method, model, config): what is in scope and not pending.
with in_scope as (
    select count(*) as n_in_scope
    from candidates_in_scope($domain, '')
),

pending as (
    select count(*) as n_pending
    from candidates_pending($domain, '', null, $method, $model_fingerprint, $config_hash)
),

final as (
    select
        in_scope.n_in_scope,
        in_scope.n_in_scope - pending.n_pending as n_done
    from in_scope
    cross join pending
)

select * from final
