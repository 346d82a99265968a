-- The RetainDB provider's write queue (plugins/memory/retaindb/__init__.py, _WriteQueue._init_db),
-- as it is left when its service could not be reached: the turns it never sent.
CREATE TABLE pending (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT, session_id TEXT, messages_json TEXT,
    created_at TEXT, last_error TEXT
);
-- the profile's owner (Hermes gave no user id: RetainDB's "default"), a CLI session
INSERT INTO pending (user_id, session_id, messages_json, created_at, last_error) VALUES
 ('default', '20260110_080000_aa11bb', '[{"role": "user", "content": "My bike is a green Brompton.", "timestamp": "2026-01-10T08:00:05+00:00"}, {"role": "assistant", "content": "A green Brompton, noted.", "timestamp": "2026-01-10T08:00:05+00:00"}]', '2026-01-10T08:00:05+00:00', 'ConnectionError: retaindb unreachable'),
 ('default', '20260110_080000_aa11bb', '[{"role": "user", "content": "The lock code is in my notes; api key sk-proj-AbCdEf0123456789AbCdEf0123456789xyz", "timestamp": "2026-01-10T08:02:00+00:00"}, {"role": "assistant", "content": "", "timestamp": "2026-01-10T08:02:00+00:00"}]', '2026-01-10T08:02:00+00:00', NULL),
-- a Telegram user whose session state.db names
 ('555000111', '20260106_200000_0f0f0f', '[{"role": "user", "content": "I moved to Ghent last spring.", "timestamp": "2026-01-06T20:05:00+00:00"}, {"role": "assistant", "content": "Ghent, got it.", "timestamp": "2026-01-06T20:05:00+00:00"}]', '2026-01-06T20:05:00+00:00', NULL),
-- a gateway user whose session state.db does not name: platform unknown
 ('777', 'gone-session', '[{"role": "user", "content": "Whose words are these?", "timestamp": "2026-01-08T10:00:00+00:00"}]', '2026-01-08T10:00:00+00:00', NULL),
-- a row the queue could not have written whole
 ('default', '20260110_080000_aa11bb', '[{"role": "user", "content": ', '2026-01-10T09:00:00+00:00', NULL);
