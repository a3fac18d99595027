-- Candidates in scope with no divergence for this model and scoring config, cut into shards in id order.
with candidates_in_scope as (
    select candidate_id
    from candidates
    where cast($domain as varchar) is null or domain = $domain
),

scored as (
    select candidate_id
    from divergences
    where model_fingerprint = $model_fingerprint
        and config_hash = $scoring_hash
),

pending as (
    select
        candidates_in_scope.candidate_id,
        row_number() over (order by candidates_in_scope.candidate_id) - 1 as position
    from candidates_in_scope
    anti join scored on candidates_in_scope.candidate_id = scored.candidate_id
),

final as (
    select
        position // $shard_size as shard_index,
        min(candidate_id) as first_candidate_id,
        max(candidate_id) as last_candidate_id,
        count(*) as n_candidates
    from pending
    group by shard_index
)

select * from final
order by shard_index
