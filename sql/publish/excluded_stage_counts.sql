-- Rows of an excluded.parquet per stage (and per reason), read back from the file itself so the funnel
-- counts what was written.
with final as (
    select stage, reason, count(*) as n_rows
    from read_parquet($path)
    group by stage, reason
)

select * from final
order by stage, n_rows desc, reason
