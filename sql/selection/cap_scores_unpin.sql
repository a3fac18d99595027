-- Drop one key's pinned CAP scores (cap_scores_pinned.sql).
delete from cap_scores_pinned
where model_fingerprint = $model_fingerprint
    and config_hash = $config_hash
    and pin_early_first is not distinct from $early_first::bigint
    and pin_early_last is not distinct from $early_last::bigint
    and pin_late_first is not distinct from $late_first::bigint
    and pin_late_last is not distinct from $late_last::bigint;
