-- 0015_reports: the review queue of reports.
--
-- One open report per reporter and target: reports_open_key holds the
-- open ones only, so a resolved report never blocks a new one. The
-- queue's filters (state, reporter) each have an index that also gives
-- the newest-first order, so a page reads about as many index entries as
-- it returns.
CREATE TABLE reports (
    report_id          TEXT PRIMARY KEY,
    reporter_id        TEXT NOT NULL,
    target_type        TEXT NOT NULL,
    target_id          TEXT NOT NULL,
    channel_id         TEXT,
    reason             TEXT NOT NULL,
    note               TEXT NOT NULL DEFAULT '',
    state              TEXT NOT NULL,
    resolution_action  TEXT,
    resolution_actor   TEXT,
    resolution_channel TEXT,
    created_at         INTEGER NOT NULL,
    resolved_at        INTEGER
) WITHOUT ROWID;
CREATE UNIQUE INDEX reports_open_key ON reports (reporter_id, target_type, target_id) WHERE state = 'open';
CREATE INDEX reports_created_idx ON reports (created_at DESC, report_id DESC);
CREATE INDEX reports_state_idx ON reports (state, created_at DESC, report_id DESC);
CREATE INDEX reports_reporter_idx ON reports (reporter_id, created_at DESC, report_id DESC);
