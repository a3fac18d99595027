-- Every published selection's members, by id: what a lab counts its labels over.
with final as (
    select
        selection_id,
        candidate_id
    from selection_members
)

select * from final
order by selection_id, candidate_id;
