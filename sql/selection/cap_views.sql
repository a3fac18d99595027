-- The default split (every bound null) as views, what most queries read.
create or replace view eligible_scores as
select * from cap_pool(null, null, null, null, null, null);

create or replace view domain_fits as
select * from cap_domain_fits(null, null, null, null, null, null);

create or replace view cap_scores as
select * from cap_scores_at(null, null, null, null, null, null);
