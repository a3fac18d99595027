-- One candidate with its source file and the ingest run that brought it in.
with candidate as (
    select * from candidates where candidate_id = $candidate_id
),
final as (
    select
        candidate.candidate_id,
        candidate.domain,
        candidate.instruction,
        candidate.input,
        candidate.response,
        candidate.dedup_key,
        candidate.image_sha256,
        candidate.source_row,
        candidate.created_at,
        sources.source_id,
        sources.path as source_path,
        sources.sha256 as source_sha256,
        sources.ingested_at as source_ingested_at,
        candidate.ingest_run_id,
        runs.status as ingest_status,
        runs.code_version as ingest_code_version
    from candidate
    left join sources on sources.source_id = candidate.source_id
    left join runs on runs.run_id = candidate.ingest_run_id
)
select * from final;
