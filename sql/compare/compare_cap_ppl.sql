-- Response PPL that CAP scoring measured, per eligible candidate of one (model, config).
with scored as (
    select candidate_id, ppl as score
    from divergences
    where model_fingerprint = $model_fingerprint
        and config_hash = $config_hash
        and excluded_reason is null
),
final as (
    select scored.candidate_id, candidates.domain, scored.score
    from scored
    join candidates on candidates.candidate_id = scored.candidate_id
)
select * from final
order by domain, candidate_id;
