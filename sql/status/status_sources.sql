select
    count(*) as n_sources,
    coalesce(sum(n_rows_read), 0) as n_rows_read,
    coalesce(sum(n_bytes), 0) as n_bytes
from sources;
