-- Per domain: the median reference PPL CAP stored for this model and scoring config (scored rows only).
select
    candidates.domain as domain,
    count(*) as n_scored,
    median(divergences.ppl) as median_ppl
from divergences
inner join candidates on candidates.candidate_id = divergences.candidate_id
where divergences.model_fingerprint = $model_fingerprint
    and divergences.config_hash = $config_hash
    and divergences.excluded_reason is null
    and divergences.ppl is not null
group by candidates.domain
order by domain;
