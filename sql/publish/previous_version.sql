-- The newest published selection of the same line (model, scoring config, method, budget) before $selection_id.
with line as (
    select
        selection_id,
        model_fingerprint,
        config_hash,
        method,
        budget,
        budget_mode,
        created_at
    from published_selections
    where selection_id = $selection_id
),

earlier as (
    select
        published.selection_id,
        published.created_at
    from published_selections as published
    inner join line
        on published.model_fingerprint is not distinct from line.model_fingerprint
        and published.config_hash is not distinct from line.config_hash
        and published.method = line.method
        and published.budget = line.budget
        and published.budget_mode = line.budget_mode
        and published.created_at < line.created_at
),

final as (
    select selection_id
    from earlier
    order by created_at desc, selection_id desc
    limit 1
)

select * from final;
