-- The candidates that hold images (a multimodal pool's image rows).
select candidate_id
from candidates
where len(image_sha256) > 0
order by candidate_id;
