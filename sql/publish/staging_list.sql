-- The staging folders this store's publishes began and did not finish, oldest first.
with final as (
    select
        staging_path,
        selection_id,
        run_id,
        started_at
    from publish_staging
)
select * from final
order by started_at, staging_path;
