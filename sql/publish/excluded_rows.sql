-- Every row of a selection's pool that is not a member, with the stage that left it out and why: the
-- duplicates and `ingest --sample` leftovers of its domains, quarantine, candidates the scorer did not
-- score or excluded (or the PPL guard held back), and the eligible ones below the cut, ranked in their
-- domain by the selection's own order ($method; $order for a score baseline; null rank for k-center and
-- the middle band). $domains null: every domain, and the quarantine rows without one.
-- $key_method null: the selection drew from all candidates (nothing was scored).
with members as (
    select unnest($member_ids::varchar[]) as candidate_id
),
pool as (
    -- ids only: the window below materialises its input, and the texts join back after it
    select candidate_id, domain, is_scored, score, excluded_reason, is_guarded
    from selection_pool($domains::varchar[], $key_method, $model_fingerprint, $config_hash, $ppl_guard::double,
                        $ppl_guard_z::double)
),
cap as (
    select candidate_id, cap, z
    from cap_scores_pinned_at($model_fingerprint, $config_hash, $early_first::bigint, $early_last::bigint,
                       $late_first::bigint, $late_last::bigint)
    -- a null model: nothing was scored
    where $model_fingerprint::varchar is not null
),
classified as (
    select
        pool.candidate_id,
        pool.domain,
        case
            when $key_method is null then 'eligible'
            when not pool.is_scored then 'unscored'
            when pool.excluded_reason is not null or pool.is_guarded then 'excluded'
            else 'eligible'
        end as pool_stage,
        case when pool.is_guarded then 'ppl_guard' else pool.excluded_reason end as excluded_by,
        coalesce(pool.score, cap.cap) as score,
        cap.z
    from pool
    left join cap on cap.candidate_id = pool.candidate_id
),
ranked as (
    select
        classified.*,
        case when $method in ('cap', 'random') or $order in ('high', 'low') then row_number() over (
            partition by domain, pool_stage
            order by
                case when $method = 'random' then md5($seed::varchar || ':' || candidate_id) end,
                case
                    when $method = 'cap' then -z
                    when $order = 'high' then -score
                    when $order = 'low' then score
                end,
                candidate_id
        ) end as rank
    from classified
),
cuts as (
    select ranked.domain, max(ranked.rank) as cut_rank, min(ranked.z) as cut_z
    from ranked
    join members on members.candidate_id = ranked.candidate_id
    group by ranked.domain
),
candidate_rows as (
    select
        case when ranked.pool_stage = 'eligible' then 'below_cut' else ranked.pool_stage end as stage,
        case ranked.pool_stage
            when 'unscored' then 'not scored'
            when 'excluded' then ranked.excluded_by
            else case $method when 'random' then 'not drawn' when 'kcenter' then 'not picked' else 'below the cut' end
        end as reason,
        null::varchar as detail,
        ranked.domain,
        ranked.candidate_id,
        null::varchar as duplicate_of,
        candidates.source_id,
        candidates.source_row,
        ranked.score,
        ranked.z,
        case when ranked.pool_stage = 'eligible' then ranked.rank end as rank,
        case when ranked.pool_stage = 'eligible' then cuts.cut_rank end as cut_rank,
        case when ranked.pool_stage = 'eligible' then cuts.cut_z end as cut_z,
        candidates.instruction,
        candidates.input,
        candidates.response,
        null::varchar as raw_text
    from ranked
    join candidates on candidates.candidate_id = ranked.candidate_id
    left join cuts on cuts.domain = ranked.domain
    where ranked.candidate_id not in (select candidate_id from members)
),
dropped_at_ingest as (
    select
        'duplicate' as stage,
        'duplicate of ' || candidate_id as reason,
        null::varchar as detail,
        domain,
        null::varchar as candidate_id,
        candidate_id as duplicate_of,
        source_id,
        source_row,
        null::varchar as raw_text
    from duplicates
    where $domains::varchar[] is null or list_contains($domains::varchar[], domain)
    union all
    select
        'sampled_out', 'left out by ingest --sample', null, domain, candidate_id, null, source_id, source_row, null
    from sampled_out
    where $domains::varchar[] is null or list_contains($domains::varchar[], domain)
    union all
    select 'quarantined', reason, detail, domain, null, null, source_id, source_row, raw_text
    from quarantine
    where $domains::varchar[] is null or list_contains($domains::varchar[], domain)
),
final as (
    select
        stage, reason, detail, domain, candidate_id, duplicate_of, source_id, source_row,
        null::double as score, null::double as z, null::bigint as rank, null::bigint as cut_rank,
        null::double as cut_z, null::varchar as instruction, null::varchar as input, null::varchar as response,
        raw_text
    from dropped_at_ingest
    union all
    select * from candidate_rows
)
select
    final.stage,
    final.reason,
    final.detail,
    final.domain,
    final.candidate_id,
    final.duplicate_of,
    final.source_id,
    parse_filename(sources.path) as source_file,
    final.source_row,
    final.score,
    final.z,
    final.rank,
    final.cut_rank,
    final.cut_z,
    final.instruction,
    final.input,
    final.response,
    final.raw_text
from final
left join sources on sources.source_id = final.source_id
