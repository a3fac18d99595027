-- Runs that produced a selection's members: ingest, generation and scoring (CAP or baseline), with member counts.
with members as (
    select candidate_id from selection_members where selection_id = $selection_id
),
selection as (
    -- random draws from CAP's pool, so its scores are CAP's; every other method reads its own results
    select
        model_fingerprint,
        config_hash,
        case when method = 'random' then 'cap' else method end as scored_by
    from selections
    where selection_id = $selection_id
),
ingest as (
    select candidates.ingest_run_id as run_id, count(*) as n_members
    from members
    join candidates on candidates.candidate_id = members.candidate_id
    group by 1
),
scoring as (
    select scores.run_id, count(*) as n_members
    from members
    join method_results as scores on scores.candidate_id = members.candidate_id
    join selection
        on selection.model_fingerprint = scores.model_fingerprint
        and selection.config_hash = scores.config_hash
        and selection.scored_by = scores.method
    group by 1
),
generation as (
    select generations.run_id, count(*) as n_members
    from members
    join generations on generations.candidate_id = members.candidate_id
    join selection on selection.model_fingerprint = generations.model_fingerprint
    group by 1
),
contributions as (
    select run_id, n_members from ingest
    union all
    select run_id, n_members from generation
    union all
    select run_id, n_members from scoring
),
final as (
    select
        runs.run_id,
        runs.kind,
        runs.status,
        runs.code_version,
        runs.model_fingerprint,
        runs.prefect_flow_run_id,
        runs.started_at,
        runs.finished_at,
        max(contributions.n_members) as n_members
    from contributions
    join runs on runs.run_id = contributions.run_id
    group by all
)
select * from final
order by started_at;
