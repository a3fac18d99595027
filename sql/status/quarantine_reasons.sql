-- Quarantined rows per reason, with how many source files hold such rows.
select
    reason,
    count(*) as n_rows,
    count(distinct source_id) as n_sources
from quarantine
group by reason
order by n_rows desc, reason;
