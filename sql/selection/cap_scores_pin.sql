-- Pin one key's CAP scores (cap_scores_pinned.sql), after cap_scores_unpin has cleared what a failed unpin left.
insert into cap_scores_pinned
select
    cap_scores_pin_of($model_fingerprint, $config_hash, $early_first, $early_last, $late_first, $late_last),
    candidate_id,
    domain,
    d_early,
    d_late,
    cap,
    z
from cap_scores_at($model_fingerprint, $config_hash, $early_first::bigint, $early_last::bigint,
                   $late_first::bigint, $late_last::bigint);
