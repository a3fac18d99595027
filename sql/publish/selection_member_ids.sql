-- Ids of one selection's members.
with final as (
    select candidate_id
    from selection_members
    where selection_id = $selection_id
)
select * from final;
