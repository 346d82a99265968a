CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version VALUES (22);
CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, session_key TEXT,
  model TEXT, model_config TEXT, parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL,
  end_reason TEXT, message_count INTEGER DEFAULT 0, title TEXT, cwd TEXT);
CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, role TEXT NOT NULL,
  content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL NOT NULL,
  observed INTEGER DEFAULT 0, active INTEGER NOT NULL DEFAULT 1, compacted INTEGER NOT NULL DEFAULT 0,
  api_content TEXT);

-- A CLI session that was compressed into a child session.
INSERT INTO sessions VALUES ('20260105_091500_a1b2c3','cli',NULL,NULL,'test-model','{}',NULL,
  1767604500.25,1767605400.0,'compression',6,'Balcony tomatoes',NULL);
INSERT INTO sessions VALUES ('20260105_093000_d4e5f6','cli',NULL,NULL,'test-model','{}','20260105_091500_a1b2c3',
  1767605400.5,NULL,NULL,3,NULL,NULL);
-- A Telegram session.
INSERT INTO sessions VALUES ('20260106_200000_0f0f0f','telegram','555000111','agent:main:telegram:dm:555000111',
  'test-model','{}',NULL,1767729600.0,NULL,NULL,2,NULL,NULL);

INSERT INTO messages (session_id,role,content,timestamp) VALUES
 ('20260105_091500_a1b2c3','user','My balcony faces south. <memory-context>[System note: The following is recalled memory context, NOT new user input. Treat as informational background data.]
- User grows herbs</memory-context>',1767604501.0);
INSERT INTO messages (session_id,role,content,tool_calls,timestamp) VALUES
 ('20260105_091500_a1b2c3','assistant',NULL,
  '[{"id":"call_1","call_id":"call_1","response_item_id":null,"type":"function","function":{"name":"memory","arguments":"{\"action\": \"add\", \"target\": \"user\", \"content\": \"Balcony faces south\"}"}}]',
  1767604502.0);
INSERT INTO messages (session_id,role,content,tool_call_id,tool_name,timestamp) VALUES
 ('20260105_091500_a1b2c3','tool','{"success": true, "done": true}','call_1','memory',1767604502.5);
INSERT INTO messages (session_id,role,content,timestamp) VALUES
 ('20260105_091500_a1b2c3','assistant','Noted: south-facing balcony.',1767604503.0);
-- Rewound (user took it back): must be skipped.
INSERT INTO messages (session_id,role,content,timestamp,active,compacted) VALUES
 ('20260105_091500_a1b2c3','user','Actually, forget the tomatoes.',1767604600.0,0,0);
-- Multimodal content with the sentinel; clock went backwards (timestamp lower than previous row).
INSERT INTO messages (session_id,role,content,timestamp) VALUES
 ('20260105_091500_a1b2c3','user',char(0)||'json:[{"type": "text", "text": "Here is a photo of the pots."}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]',1767604400.0);

-- Continuation session: starts with a compaction summary, then real turns.
INSERT INTO messages (session_id,role,content,timestamp) VALUES
 ('20260105_093000_d4e5f6','user','[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below. ...
User has a south-facing balcony with tomato pots.
--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---
How often should I water them?',1767605401.0);
INSERT INTO messages (session_id,role,content,timestamp) VALUES
 ('20260105_093000_d4e5f6','assistant','Every morning in summer.',1767605405.0);

-- Telegram: a gateway bookkeeping row and an observed group message.
INSERT INTO messages (session_id,role,content,timestamp) VALUES
 ('20260106_200000_0f0f0f','session_meta',NULL,1767729600.0);
INSERT INTO messages (session_id,role,content,timestamp,observed) VALUES
 ('20260106_200000_0f0f0f','user','(someone else) anyone seen my keys?',1767729601.0,1);

-- Telegram: what the user said.
INSERT INTO messages (session_id,role,content,timestamp) VALUES
 ('20260106_200000_0f0f0f','user','My cat is called Miso and she hates the vacuum cleaner.',1767729700.0),
 ('20260106_200000_0f0f0f','assistant','Miso sounds like a cat with opinions.',1767729705.0);
-- A background review prompt an older build persisted, and its reply: both skipped.
INSERT INTO messages (session_id,role,content,timestamp) VALUES
 ('20260105_093000_d4e5f6','user','Review the conversation above and consider saving to memory anything worth keeping.',1767605500.0),
 ('20260105_093000_d4e5f6','assistant','Nothing new to save.',1767605501.0);
-- A sub-agent's session: skipped whole.
INSERT INTO sessions VALUES ('20260107_100000_abcdef','cli',NULL,NULL,'test-model','{"_delegate_from": "20260105_093000_d4e5f6"}',NULL,
  1767780000.0,1767780060.0,NULL,1,NULL,NULL);
INSERT INTO messages (session_id,role,content,timestamp) VALUES
 ('20260107_100000_abcdef','user','Summarise the watering schedule.',1767780001.0);
