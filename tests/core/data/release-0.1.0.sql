PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version VALUES(3);
CREATE TABLE deliveries (
        seq INTEGER PRIMARY KEY,
        delivery_id TEXT NOT NULL UNIQUE,
        source TEXT NOT NULL,
        event TEXT NOT NULL,
        payload BLOB NOT NULL,
        subject TEXT NOT NULL,
        received_at REAL NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed')),
        next_attempt_at REAL NOT NULL,
        last_error TEXT
    , finished_at REAL);
INSERT INTO deliveries VALUES(1,'push-1','github','push',X'7b22726566223a2022726566732f68656164732f6d61696e222c20227265706f7369746f7279223a207b2266756c6c5f6e616d65223a2022766c6c6d2d70726f6a6563742f766c6c6d227d7d','repo:vllm-project/vllm',900.0,1,'failed',900.0,'TransientError: GitHub answered 502',1000.0);
INSERT INTO deliveries VALUES(2,'review-1','github','pull_request_review',X'7b22616374696f6e223a20227375626d6974746564227d','pr:vllm-project/vllm#7',950.0,1,'done',950.0,NULL,1000.0);
CREATE TABLE handler_runs (
        delivery_id TEXT NOT NULL REFERENCES deliveries (delivery_id) ON DELETE CASCADE,
        handler TEXT NOT NULL,
        PRIMARY KEY (delivery_id, handler)
    ) WITHOUT ROWID;
INSERT INTO handler_runs VALUES('push-1','handlers.bump.on_push');
INSERT INTO handler_runs VALUES('review-1','handlers.landing.on_review');
CREATE TABLE state (
        kind TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL, updated_at REAL NOT NULL DEFAULT 0,
        PRIMARY KEY (kind, key)
    ) WITHOUT ROWID;
INSERT INTO state VALUES('landing','vllm-project/vllm#7','{"approved_by":"maintainer","approved_head":null,"auto_merge_for":null,"failed_runs":{},"handling":{},"merged_sha":"abc","pin":"flash-attention","reapproval_for":null,"review_id":5,"seen_failures":[],"stopped_for":null}',1000.0);
INSERT INTO state VALUES('landing','vllm-project/vllm#flash-attention','{"landed_at":990.0,"pr":7}',1000.0);
CREATE INDEX deliveries_due ON deliveries (status, next_attempt_at);
CREATE INDEX deliveries_by_subject ON deliveries (subject, status);
CREATE INDEX deliveries_by_age ON deliveries (received_at, seq);
CREATE INDEX deliveries_queue ON deliveries (status, received_at, seq);
CREATE INDEX deliveries_finished ON deliveries (finished_at)
        WHERE finished_at IS NOT NULL;
CREATE INDEX state_by_age ON state (kind, updated_at);
COMMIT;
