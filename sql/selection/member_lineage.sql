-- Text and lineage of given candidate ids: source file, quarantine hits and exclusion by the scorer of $method.
with members as (
    select distinct unnest($candidate_ids::varchar[]) as candidate_id
),
quarantined as (
    select distinct source_id, source_row from quarantine
),
final as (
    select
        members.candidate_id,
        candidates.candidate_id is not null as has_candidate,
        candidates.instruction,
        candidates.input,
        candidates.response,
        candidates.source_id,
        candidates.source_row,
        sources.source_id is not null as has_source,
        sources.path as source_path,
        sources.sha256 as source_sha256,
        quarantined.source_id is not null as is_quarantined,
        scores.candidate_id is not null as has_score,
        scores.excluded_reason
    from members
    left join candidates on candidates.candidate_id = members.candidate_id
    left join sources on sources.source_id = candidates.source_id
    left join quarantined
        on quarantined.source_id = candidates.source_id and quarantined.source_row = candidates.source_row
    left join method_results as scores
        on scores.candidate_id = members.candidate_id
        and scores.method = $method
        and scores.model_fingerprint = $model_fingerprint
        and scores.config_hash = $config_hash
)
select * from final
order by candidate_id;
