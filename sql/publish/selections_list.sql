-- Published selections, newest first.
with final as (
    select
        selection_id,
        method,
        budget,
        budget_mode,
        seed,
        n_members,
        model_fingerprint,
        config_hash,
        created_at,
        out_dir
    from published_selections
)
select * from final
order by created_at desc, selection_id desc;
