-- Quarantine reasons of one source, most frequent first.
select
    reason,
    count(*) as n_rows
from quarantine
where source_id = $source_id
group by reason
order by n_rows desc, reason;
