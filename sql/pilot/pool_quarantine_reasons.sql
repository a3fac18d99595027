-- Why a pilot's pool rows were quarantined: each reason and its rows, the most frequent first.
with final as (
    select
        reason,
        count(*) as n_rows
    from quarantine
    group by reason
)

select * from final
order by n_rows desc, reason;
