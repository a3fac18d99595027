-- The images of a page of candidates ($candidate_ids), in prompt order, each with its stored format;
-- text-only candidates have no row.
with wanted as (
    select candidate_id, image_sha256
    from candidates
    where list_contains($candidate_ids::varchar[], candidate_id)
        and len(image_sha256) > 0
),

listed as (
    select
        candidate_id,
        unnest(image_sha256) as sha256,
        generate_subscripts(image_sha256, 1) as position
    from wanted
),

final as (
    select
        listed.candidate_id,
        list(listed.sha256 order by listed.position) as sha256s,
        list(images.format order by listed.position) as formats
    from listed
    join images on images.sha256 = listed.sha256
    group by listed.candidate_id
)

select * from final;
