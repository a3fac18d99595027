-- Published selections that contain one candidate.
with memberships as (
    select * from selection_members where candidate_id = $candidate_id
),
final as (
    select
        memberships.selection_id,
        selections.method,
        selections.budget,
        memberships.rank,
        memberships.z,
        selections.out_dir,
        selections.created_at
    from memberships
    join published_selections as selections on selections.selection_id = memberships.selection_id
)
select * from final
order by created_at;
