-- Whether a selection folder found on disk has a row, and whether the run that wrote it is one of this store's.
with final as (
    select
        exists (select 1 from selections where selection_id = $selection_id) as has_row,
        exists (select 1 from runs where run_id = $run_id) as is_ours
)
select * from final;
