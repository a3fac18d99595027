-- LESS scores against one target: the cosine of each stored feature (model, feature config) with the
-- target aggregate, under config_hash = the target fingerprint. Excluded features keep their reason and
-- get no score; candidates already scored against this target are left as they are.
insert into method_scores (candidate_id, method, model_fingerprint, config_hash, score, excluded_reason, run_id)
with target as (
    select aggregate::double[] as aggregate
    from less_targets
    where target_fingerprint = $target_fingerprint
),
features as (
    select candidate_id, feature, excluded_reason
    from gradient_features
    where model_fingerprint = $model_fingerprint
        and config_hash = $feature_config_hash
),
done as (
    select candidate_id
    from results_done('less', $model_fingerprint, $target_fingerprint)
),
final as (
    select
        features.candidate_id,
        'less' as method,
        $model_fingerprint as model_fingerprint,
        $target_fingerprint as config_hash,
        case
            when features.excluded_reason is null
                then list_cosine_similarity(features.feature::double[], target.aggregate)
        end as score,
        features.excluded_reason,
        $run_id as run_id
    from features
    cross join target
    anti join done on done.candidate_id = features.candidate_id
)
select * from final;
