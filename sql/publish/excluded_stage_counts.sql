-- Rows of an excluded.parquet per stage, and per reason in the stages whose reason names a kind
-- ($reason_stages), read back from the file itself so the funnel counts what was written. The other
-- stages' reasons are per row ('duplicate of <id>'): grouping by them made a group, and a fetched row, per row.
with final as (
    select
        stage,
        case when list_contains($reason_stages::varchar[], stage) then reason end as reason,
        count(*) as n_rows
    from read_parquet($path)
    group by all
)

select * from final
order by stage, n_rows desc, reason
