-- CAP's scores of one key, computed once for every query of one stage that reads them
-- (capsel/selection/pinned_scores.py): each reader of cap_scores_at would join the pool to its candidates and
-- refit again, and DuckDB's parallel sums let two evaluations differ in the 13th digit of z, so a stage's picks
-- and its excluded.parquet could rank by different z. Temporary: a pin belongs to the connection that made it.
create temp table if not exists cap_scores_pinned (
    model_fingerprint varchar,
    config_hash varchar,
    pin_early_first bigint,
    pin_early_last bigint,
    pin_late_first bigint,
    pin_late_last bigint,
    candidate_id varchar,
    domain varchar,
    d_early double,
    d_late double,
    cap double,
    z double
);

-- cap_scores_at's rows for a pinned key (its arguments, the same six)
create or replace temp macro cap_scores_pinned_at(pinned_model_fingerprint, pinned_config_hash, early_first,
                                                  early_last, late_first, late_last)
as table
select candidate_id, model_fingerprint, config_hash, domain, d_early, d_late, cap, z
from cap_scores_pinned
where model_fingerprint = pinned_model_fingerprint
    and config_hash = pinned_config_hash
    and pin_early_first is not distinct from cast(early_first as bigint)
    and pin_early_last is not distinct from cast(early_last as bigint)
    and pin_late_first is not distinct from cast(late_first as bigint)
    and pin_late_last is not distinct from cast(late_last as bigint);
