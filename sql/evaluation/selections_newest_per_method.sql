-- The newest published selection of each method (and budget), for "evaluate what this pool has".
with ranked as (
    select
        selection_id,
        method,
        budget,
        row_number() over (partition by method, budget order by created_at desc, selection_id desc) as n_newer
    from published_selections
),
final as (
    select selection_id, method, budget
    from ranked
    where n_newer = 1
    order by method, budget
)
select * from final;
