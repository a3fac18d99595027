-- Selections whose publish did not finish: a kill between the row's commit and its 'published' mark.
with final as (
    select
        selection_id,
        out_dir
    from selections
    where status = 'publishing'
)
select * from final
order by selection_id;
