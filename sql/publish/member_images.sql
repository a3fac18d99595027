-- The images of given candidates in prompt order (position 1 first), with what the image store recorded of
-- each; format is null when the `images` table has no row for a listed sha256.
with members as (
    select distinct unnest($candidate_ids::varchar[]) as candidate_id
),
listed as (
    select
        candidates.candidate_id,
        unnest(candidates.image_sha256) as sha256,
        generate_subscripts(candidates.image_sha256, 1) as position
    from candidates
    join members on members.candidate_id = candidates.candidate_id
    where candidates.image_sha256 is not null
)
select listed.candidate_id, listed.position, listed.sha256, images.format, images.n_bytes
from listed
left join images on images.sha256 = listed.sha256
order by listed.candidate_id, listed.position;
