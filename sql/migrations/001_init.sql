-- capsel schema v1: the pool, its lineage, generations, divergences, selections, runs.

create table runs (
    run_id varchar primary key,
    kind varchar not null,                 -- ingest | generate | score | select | flow | ...
    prefect_flow_run_id varchar,
    parent_run_id varchar,
    code_version varchar not null,
    config json,
    model_fingerprint varchar,
    status varchar not null,               -- running | completed | failed | interrupted
    counters json,
    error varchar,
    started_at timestamp not null default current_timestamp,
    finished_at timestamp
);

create table sources (
    source_id varchar primary key,         -- first 16 hex digits of sha256
    path varchar not null,
    sha256 varchar not null unique,
    n_bytes bigint not null,
    n_rows_read bigint not null,
    n_inserted bigint not null,
    n_duplicates bigint not null,
    n_quarantined bigint not null,
    n_sampled_out bigint not null default 0,
    domain_option varchar,
    field_map json,
    ingest_run_id varchar not null,
    ingested_at timestamp not null default current_timestamp
);

create table candidates (
    candidate_id varchar primary key,      -- stable hash of domain + dedup key
    domain varchar not null,
    instruction varchar not null,
    input varchar not null default '',
    response varchar not null,
    dedup_key varchar not null,
    source_id varchar not null,
    source_row bigint not null,            -- 1-based line (JSONL/CSV) or row/element number
    ingest_run_id varchar not null,
    created_at timestamp not null default current_timestamp
);

-- Rows dropped as duplicates keep a pointer to the candidate that won, so no row vanishes untraced.
create table duplicates (
    source_id varchar not null,
    source_row bigint not null,
    candidate_id varchar not null,         -- the first occurrence (may sit in sampled_out after --sample)
    domain varchar not null,
    ingest_run_id varchar not null
);

-- Unique rows left out by `ingest --sample`, kept so the draw can be audited.
create table sampled_out (
    source_id varchar not null,
    source_row bigint not null,
    candidate_id varchar not null,
    domain varchar not null,
    ingest_run_id varchar not null
);

create table quarantine (
    source_id varchar not null,
    source_row bigint not null,
    domain varchar,                        -- null when the row has no usable domain
    raw_text varchar,
    reason varchar not null,               -- capsel.ingest.reasons.Reason: not_json | invalid_utf8 | ...
    detail varchar,
    ingest_run_id varchar not null
);

create table models (
    model_fingerprint varchar primary key,
    name_or_path varchar not null,
    revision varchar,
    weight_files json,                     -- {file name: sha256}
    dtype varchar not null,
    architecture varchar,
    n_layers integer,
    created_at timestamp not null default current_timestamp
);

create table scoring_configs (
    config_hash varchar primary key,
    config json not null,
    generation_hash varchar                -- a scoring config: the generation config its y-hat comes from
);

create table generations (
    candidate_id varchar not null,
    model_fingerprint varchar not null,
    config_hash varchar not null,          -- hash of the generation config (prompt tokens, horizon)
    prompt_ids integer[],
    response_ids integer[],
    generated_ids integer[],
    excluded_reason varchar,               -- short_prompt | short_response | empty_generation
    generator varchar not null,            -- hf | vllm
    run_id varchar not null,
    created_at timestamp not null default current_timestamp,
    primary key (candidate_id, model_fingerprint, config_hash)
);

create table divergences (
    candidate_id varchar not null,
    model_fingerprint varchar not null,
    config_hash varchar not null,          -- hash of the scoring config (tokens, horizon, split)
    n_aligned integer,
    layer_divergence double[],
    d_early double,
    d_late double,
    ppl double,
    excluded_reason varchar,
    run_id varchar not null,
    created_at timestamp not null default current_timestamp,
    primary key (candidate_id, model_fingerprint, config_hash)
);

create table selections (
    selection_id varchar primary key,
    method varchar not null,
    budget varchar not null,               -- as given: '800' or '10%'
    budget_mode varchar not null,          -- per_domain | total
    domains varchar[],
    seed integer,
    model_fingerprint varchar,
    config_hash varchar,
    run_id varchar,
    out_dir varchar not null,
    n_members bigint not null,
    manifest json,
    created_at timestamp not null default current_timestamp
);

create table selection_members (
    selection_id varchar not null,
    candidate_id varchar not null,
    domain varchar not null,
    rank integer not null,                 -- 1-based within the domain
    score double,
    z double,
    primary key (selection_id, candidate_id)
);

-- baselines: scores of the paper's baseline selectors (ppl, ifd, qurating, ...), one row per
-- (candidate, method, scorer, config); model_fingerprint names the LM, encoder or rater that scored.
-- An excluded row may keep its score (ifd_ge_1) so reports can show what was left out and why.
create table method_scores (
    candidate_id varchar not null,
    method varchar not null,
    model_fingerprint varchar not null,
    config_hash varchar not null,
    score double,
    excluded_reason varchar,
    run_id varchar not null,
    created_at timestamp not null default current_timestamp,
    primary key (candidate_id, method, model_fingerprint, config_hash)
);

-- selection: every eligible result of every method with its domain, defined once here so `select`, the
-- score export and compare read the same rows. A result is eligible when it records no exclusion reason.
create view eligible_results as
with measured as (
    select candidate_id, 'cap' as method, model_fingerprint, config_hash, d_early, d_late, null::double as score
    from divergences
    where excluded_reason is null
    union all
    select candidate_id, method, model_fingerprint, config_hash, null::double, null::double, score
    from method_scores
    where excluded_reason is null
),
final as (
    select
        measured.candidate_id,
        measured.method,
        measured.model_fingerprint,
        measured.config_hash,
        candidates.domain,
        measured.d_early,
        measured.d_late,
        measured.score
    from measured
    join candidates on candidates.candidate_id = measured.candidate_id
)
select * from final;

-- eligible_scores, domain_fits and cap_scores (CAP's pool, fit and scores) are formulas, not schema: they are
-- created at connect from sql/selection/ (capsel/db/definitions.py).


-- baselines: unit-normalised text embeddings (k-center); the greedy selection runs at select time.
create table embeddings (
    candidate_id varchar not null,
    encoder_fingerprint varchar not null,
    config_hash varchar not null,
    embedding float[],
    run_id varchar not null,
    created_at timestamp not null default current_timestamp,
    primary key (candidate_id, encoder_fingerprint, config_hash)
);

-- less: unit-normalised CountSketch of each candidate's LoRA gradient (null with a reason when excluded);
-- model_fingerprint is the LM, config_hash the feature config. Targets reuse them (less_targets).
create table gradient_features (
    candidate_id varchar not null,
    model_fingerprint varchar not null,
    config_hash varchar not null,
    feature float[],
    excluded_reason varchar,
    run_id varchar not null,
    created_at timestamp not null default current_timestamp,
    primary key (candidate_id, model_fingerprint, config_hash)
);

-- less: a target set's aggregate (mean of its unit features, normalised). target_fingerprint hashes the
-- file's sha256, --target-max, the feature config and the model; it is the config_hash of the 'less'
-- rows in method_scores, whose score is the cosine of a candidate's feature with this aggregate.
create table less_targets (
    target_fingerprint varchar primary key,
    model_fingerprint varchar not null,
    feature_config_hash varchar not null,
    target_sha256 varchar not null,
    target_path varchar not null,
    target_max integer not null,
    n_examples integer not null,
    n_used integer not null,
    excluded json,                         -- {reason: count} of target examples with no feature
    aggregate float[] not null,
    run_id varchar not null,
    created_at timestamp not null default current_timestamp
);

-- baselines: every method's per-candidate results in one shape, so pools, lineage and pending work
-- read one relation. CAP rows carry no score here (it is per-domain, see cap_scores).
create view method_results as
with cap as (
    select
        candidate_id,
        'cap' as method,
        model_fingerprint,
        config_hash,
        null::double as score,
        excluded_reason,
        run_id,
        created_at
    from divergences
),
scored as (
    select candidate_id, method, model_fingerprint, config_hash, score, excluded_reason, run_id, created_at
    from method_scores
),
embedded as (
    select
        candidate_id,
        'kcenter' as method,
        encoder_fingerprint as model_fingerprint,
        config_hash,
        null::double as score,
        null::varchar as excluded_reason,
        run_id,
        created_at
    from embeddings
),
featured as (
    select
        candidate_id,
        'less_features' as method,
        model_fingerprint,
        config_hash,
        null::double as score,
        excluded_reason,
        run_id,
        created_at
    from gradient_features
),
final as (
    select * from cap
    union all
    select * from scored
    union all
    select * from embedded
    union all
    select * from featured
)
select * from final;

-- baselines: a score method's eligible rows with their domain, read by selection and compare alike.
create view eligible_method_scores as
select candidate_id, method, model_fingerprint, config_hash, domain, score
from eligible_results
where method != 'cap';
