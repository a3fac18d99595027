-- What ingest made of a pilot's pool: rows read, kept, duplicates and quarantined, from where they landed.
with final as (
    select
        coalesce(sum(n_rows_read), 0) as n_read,
        (select count(*) from candidates) as n_kept,
        (select count(*) from duplicates) as n_duplicates,
        (select count(*) from quarantine) as n_quarantined
    from sources
)

select * from final;
