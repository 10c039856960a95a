-- 0015_reports: the review queue of reports.
--
-- One open report per reporter and target: reports_open_key holds the
-- open ones only, so a resolved report never blocks a new one. The
-- queue's filters (state, reporter) each have an index that also gives
-- the newest-first order, so a page reads about as many index entries as
-- it returns.
CREATE TABLE reports (
    report_id          text COLLATE "C" PRIMARY KEY,
    reporter_id        text COLLATE "C" NOT NULL,
    target_type        text COLLATE "C" NOT NULL,
    target_id          text COLLATE "C" NOT NULL,
    channel_id         text COLLATE "C",
    reason             text NOT NULL,
    note               text NOT NULL DEFAULT '',
    state              text COLLATE "C" NOT NULL,
    resolution_action  text,
    resolution_actor   text COLLATE "C",
    resolution_channel text COLLATE "C",
    created_at         timestamptz NOT NULL,
    resolved_at        timestamptz
);
CREATE UNIQUE INDEX reports_open_key ON reports (reporter_id, target_type, target_id) WHERE state = 'open';
CREATE INDEX reports_created_idx ON reports (created_at DESC, report_id DESC);
CREATE INDEX reports_state_idx ON reports (state, created_at DESC, report_id DESC);
CREATE INDEX reports_reporter_idx ON reports (reporter_id, created_at DESC, report_id DESC);
