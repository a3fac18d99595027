-- A selection's row is committed as 'publishing' before its folder is renamed into place and marked
-- 'published' after, so a kill in between leaves a row the next reconcile can finish or undo
-- (capsel.publish.reconcile). Rows written before this version were published.
alter table selections add column status varchar not null default 'published';

-- The selections a reader may show: finished publishes only.
create view published_selections as
select * from selections
where status = 'published';
