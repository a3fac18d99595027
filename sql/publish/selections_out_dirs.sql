-- The folders selections were published into (each row's out_dir is <folder>/<selection_id>).
with final as (
    select distinct out_dir
    from selections
)
select * from final
order by out_dir;
