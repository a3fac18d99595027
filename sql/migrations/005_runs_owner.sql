-- The process that runs each run: a run left 'running' by a process of this host that is gone was
-- killed, and the next writer marks it 'interrupted'. Runs recorded before this migration have neither.
alter table runs add column pid integer;
alter table runs add column host varchar;
