-- The highest- and lowest-z candidates of each domain for one (model, config): what a run summary shows.
with pool as (
    select candidate_id, domain, z
    from cap_scores_pinned_at($model_fingerprint, $config_hash, $early_first::bigint, $early_last::bigint,
                       $late_first::bigint, $late_last::bigint)
    where z is not null
),
ends as (
    -- the n-th highest and lowest z: the ranks below sort the rows at the ends, not the whole pool
    select domain, list_last(max(z, $n_examples)) as top_z, list_last(min(z, $n_examples)) as bottom_z
    from pool
    group by domain
),
scored as (
    select
        candidate_id,
        domain,
        z,
        row_number() over (partition by domain order by z desc, candidate_id asc) as top_rank,
        row_number() over (partition by domain order by z asc, candidate_id asc) as bottom_rank
    from pool
    join ends using (domain)
    where pool.z >= ends.top_z or pool.z <= ends.bottom_z
),
picked as (
    select
        *,
        case when top_rank <= $n_examples then 'top' else 'bottom' end as side
    from scored
    where top_rank <= $n_examples or bottom_rank <= $n_examples
),
final as (
    select
        picked.domain,
        picked.side,
        picked.candidate_id,
        picked.z,
        candidates.instruction
    from picked
    join candidates on candidates.candidate_id = picked.candidate_id
)
select * from final
order by domain, side desc, z desc, candidate_id;
