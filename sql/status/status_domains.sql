-- What the store holds per domain: pool, dropped rows, scored candidates, selections.
with candidate_counts as (
    select domain, count(*) as n_candidates from candidates group by domain
),

duplicate_counts as (
    select domain, count(*) as n_duplicates from duplicates group by domain
),

quarantine_counts as (
    select coalesce(domain, '(none)') as domain, count(*) as n_quarantined from quarantine group by 1
),

sampled_out_counts as (
    select domain, count(*) as n_sampled_out from sampled_out group by domain
),

scored_counts as (
    select
        candidates.domain,
        count(distinct divergences.candidate_id) as n_scored
    from divergences
    inner join candidates using (candidate_id)
    where divergences.excluded_reason is null
    group by candidates.domain
),

selection_counts as (
    select members.domain, count(distinct members.selection_id) as n_selections
    from selection_members as members
    inner join published_selections using (selection_id)
    group by members.domain
),

domains as (
    select domain from candidate_counts
    union select domain from duplicate_counts
    union select domain from quarantine_counts
    union select domain from sampled_out_counts
),

final as (
    select
        domains.domain,
        coalesce(candidate_counts.n_candidates, 0) as n_candidates,
        coalesce(duplicate_counts.n_duplicates, 0) as n_duplicates,
        coalesce(quarantine_counts.n_quarantined, 0) as n_quarantined,
        coalesce(sampled_out_counts.n_sampled_out, 0) as n_sampled_out,
        coalesce(scored_counts.n_scored, 0) as n_scored,
        coalesce(selection_counts.n_selections, 0) as n_selections
    from domains
    left join candidate_counts using (domain)
    left join duplicate_counts using (domain)
    left join quarantine_counts using (domain)
    left join sampled_out_counts using (domain)
    left join scored_counts using (domain)
    left join selection_counts using (domain)
    order by domains.domain
)

select * from final;
