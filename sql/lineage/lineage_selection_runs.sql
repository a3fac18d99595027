-- Runs behind a selection's members: ingest, generation and scoring (CAP or baseline; shards rolled
-- up into their scoring run, with a shard count), and the flow runs above them or above the select run.
with members as (
    select candidate_id from selection_members where selection_id = $selection_id
),
selection as (
    -- random draws from CAP's pool, so its scores are CAP's; every other method reads its own results
    select
        selections.model_fingerprint,
        selections.config_hash,
        case when selections.method = 'random' then 'cap' else selections.method end as scored_by,
        scoring_configs.generation_hash,
        selections.run_id
    from selections
    left join scoring_configs on scoring_configs.config_hash = selections.config_hash
    where selections.selection_id = $selection_id
),
ingest as (
    select candidates.ingest_run_id as run_id, members.candidate_id
    from members
    join candidates on candidates.candidate_id = members.candidate_id
),
scoring as (
    select scores.run_id, members.candidate_id
    from members
    join method_results as scores on scores.candidate_id = members.candidate_id
    join selection
        on selection.model_fingerprint = scores.model_fingerprint
        and selection.config_hash = scores.config_hash
        and selection.scored_by = scores.method
),
generation as (
    select generations.run_id, members.candidate_id
    from members
    join generations on generations.candidate_id = members.candidate_id
    join selection
        on selection.model_fingerprint = generations.model_fingerprint
        and selection.generation_hash = generations.config_hash
),
contributions as (
    select run_id, candidate_id from ingest
    union all
    select run_id, candidate_id from generation
    union all
    select run_id, candidate_id from scoring
),
rolled_up as (
    select
        case when runs.kind = 'score_shard' then runs.parent_run_id else runs.run_id end as run_id,
        case when runs.kind = 'score_shard' then runs.run_id end as shard_run_id,
        contributions.candidate_id
    from contributions
    join runs on runs.run_id = contributions.run_id
),
producing as (
    select
        run_id,
        count(distinct candidate_id) as n_members,
        count(distinct shard_run_id) as n_shards
    from rolled_up
    group by run_id
),
flows as (
    select distinct parent.run_id
    from runs as child
    join runs as parent on parent.run_id = child.parent_run_id
    where parent.kind = 'flow'
        and (
            child.run_id in (select run_id from producing)
            or child.run_id in (select run_id from selection)
        )
),
listed as (
    select run_id, n_members, n_shards from producing
    union all
    select run_id, null as n_members, null as n_shards
    from flows
    where run_id not in (select run_id from producing)
),
final as (
    select
        runs.*,
        listed.n_members,
        listed.n_shards
    from listed
    join run_origins as runs on runs.run_id = listed.run_id
)
select * from final
order by started_at;
