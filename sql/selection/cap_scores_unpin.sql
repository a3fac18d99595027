-- Drop one key's pinned CAP scores (cap_scores_pinned.sql).
delete from cap_scores_pinned
where pin = cap_scores_pin_of($model_fingerprint, $config_hash, $early_first, $early_last, $late_first, $late_last);
