-- One candidate and its lineage as one row: its source file and ingest run, then, nested as lists in their
-- order, the rows dropped as its duplicates, its images (<image> order), the model's answers to it, its CAP
-- divergences and baseline results (each with the run behind it) and the published selections holding it.
-- An image's file is <db stem>.images/<sha256[:2]>/<sha256>.<ext of format> (capsel.image_store.store).
with candidate as (
    select * from candidates where candidate_id = $candidate_id
),

dropped as (
    select
        sources.path as source_path,
        duplicates.source_row,
        duplicates.ingest_run_id
    from candidate
    join duplicates on duplicates.candidate_id = candidate.candidate_id
    left join sources on sources.source_id = duplicates.source_id
),

positioned as (
    select
        candidate_id,
        generate_subscripts(image_sha256, 1) as position,
        unnest(image_sha256) as sha256
    from candidate
    where image_sha256 is not null
),

pictured as (
    select
        positioned.candidate_id,
        positioned.position,
        positioned.sha256,
        images.format,
        images.width,
        images.height,
        images.n_bytes
    from positioned
    left join images on images.sha256 = positioned.sha256
),

generated as (
    select
        generations.model_fingerprint,
        generations.config_hash,
        generations.generator,
        generations.excluded_reason,
        len(generations.prompt_ids) as n_prompt_tokens,
        len(generations.response_ids) as n_response_tokens,
        len(generations.generated_ids) as n_generated_tokens,
        generations.run_id as generation_run_id,
        runs.status as generation_run_status,
        runs.kind as generation_run_kind,
        runs.parent_run_id as generation_parent_run_id,
        runs.prefect_flow_run_id as generation_prefect_flow_run_id,
        generations.created_at as generated_at
    from candidate
    join generations on generations.candidate_id = candidate.candidate_id
    left join run_origins as runs on runs.run_id = generations.run_id
),

results as (
    -- every result for the candidate, CAP's and each baseline's, with its model, config and run
    select
        method_results.candidate_id,
        method_results.method,
        method_results.model_fingerprint,
        models.name_or_path as model_name,
        models.dtype as model_dtype,
        method_results.config_hash,
        scoring_configs.config,
        method_results.score,
        method_results.excluded_reason,
        method_results.run_id as score_run_id,
        runs.status as score_run_status,
        runs.code_version as score_code_version,
        runs.kind as score_run_kind,
        runs.parent_run_id as score_parent_run_id,
        runs.prefect_flow_run_id as score_prefect_flow_run_id,
        method_results.created_at as scored_at
    from candidate
    join method_results on method_results.candidate_id = candidate.candidate_id
    left join models on models.model_fingerprint = method_results.model_fingerprint
    left join scoring_configs on scoring_configs.config_hash = method_results.config_hash
    left join run_origins as runs on runs.run_id = method_results.run_id
),

diverged as (
    select
        results.model_fingerprint,
        results.model_name,
        results.model_dtype,
        results.config_hash,
        results.config as scoring_config,
        results.excluded_reason,
        divergences.n_aligned,
        divergences.d_early,
        divergences.d_late,
        divergences.ppl,
        cap_scores.cap,
        cap_scores.z,
        results.score_run_id,
        results.score_run_status,
        results.score_code_version,
        results.score_run_kind,
        results.score_parent_run_id,
        results.score_prefect_flow_run_id,
        results.scored_at
    from results
    join divergences
        on divergences.candidate_id = results.candidate_id
        and divergences.model_fingerprint = results.model_fingerprint
        and divergences.config_hash = results.config_hash
    left join cap_scores
        on cap_scores.candidate_id = results.candidate_id
        and cap_scores.model_fingerprint = results.model_fingerprint
        and cap_scores.config_hash = results.config_hash
    where results.method = 'cap'
),

baseline_scored as (
    -- ppl, ifd, qurating scores; kcenter embeddings
    select
        results.method,
        results.model_fingerprint,
        results.model_name,
        results.model_dtype,
        results.config_hash,
        results.config as method_config,
        results.score,
        results.excluded_reason,
        results.score_run_id,
        results.score_run_status,
        results.score_code_version,
        results.scored_at
    from results
    where results.method <> 'cap'
),

selected as (
    select
        members.selection_id,
        selections.method,
        selections.budget,
        members.rank,
        members.z,
        selections.out_dir,
        selections.created_at
    from candidate
    join selection_members as members on members.candidate_id = candidate.candidate_id
    join published_selections as selections on selections.selection_id = members.selection_id
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
        runs.code_version as ingest_code_version,
        array(select dropped from dropped order by source_path, source_row) as duplicates,
        array(select pictured from pictured order by position) as images,
        array(select generated from generated order by generated_at) as generations,
        array(select diverged from diverged order by scored_at) as scores,
        array(select baseline_scored from baseline_scored order by scored_at, method) as baseline_scores,
        array(select selected from selected order by created_at) as selections
    from candidate
    left join sources on sources.source_id = candidate.source_id
    left join run_origins as runs on runs.run_id = candidate.ingest_run_id
)

select * from final;
