-- CAP's scores of one key, computed once for every query of one stage that reads them
-- (capsel/selection/pinned_scores.py): each reader of cap_scores_at would join the pool to its candidates and
-- refit again, and DuckDB's parallel sums let two evaluations differ in the 13th digit of z, so a stage's picks
-- and its excluded.parquet could rank by different z. Temporary: a pin belongs to the connection that made it.
-- A row names its key by one hash, not six columns: at 8M rows the key's strings would double the table.
create temp table if not exists cap_scores_pinned (
    pin ubigint,
    candidate_id varchar,
    domain varchar,
    d_early double,
    d_late double,
    cap double,
    z double
);

create or replace temp macro cap_scores_pin_of(pin_model_fingerprint, pin_config_hash, early_first, early_last,
                                               late_first, late_last)
as hash(cast(pin_model_fingerprint as varchar), cast(pin_config_hash as varchar), cast(early_first as bigint),
        cast(early_last as bigint), cast(late_first as bigint), cast(late_last as bigint));

-- cap_scores_at's rows for a pinned key (its arguments, the same six)
create or replace temp macro cap_scores_pinned_at(pinned_model_fingerprint, pinned_config_hash, early_first,
                                                  early_last, late_first, late_last)
as table
select
    candidate_id,
    cast(pinned_model_fingerprint as varchar) as model_fingerprint,
    cast(pinned_config_hash as varchar) as config_hash,
    domain,
    d_early,
    d_late,
    cap,
    z
from cap_scores_pinned
where pin = cap_scores_pin_of(pinned_model_fingerprint, pinned_config_hash, early_first, early_last, late_first,
                              late_last);
