-- The newest published selection's funnel (rows read down to members), as its manifest records it.
with final as (
    select selection_id, created_at, manifest->'funnel' as funnel
    from published_selections
    where (manifest->'funnel') is not null
)

select * from final
order by created_at desc, selection_id desc
limit 1
