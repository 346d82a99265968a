CREATE TABLE facts (fact_id INTEGER PRIMARY KEY AUTOINCREMENT, content TEXT NOT NULL UNIQUE,
  category TEXT DEFAULT 'general', tags TEXT DEFAULT '', trust_score REAL DEFAULT 0.5,
  retrieval_count INTEGER DEFAULT 0, helpful_count INTEGER DEFAULT 0,
  created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
  hrr_vector BLOB);
CREATE TABLE entities (entity_id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL,
  entity_type TEXT DEFAULT 'unknown', aliases TEXT DEFAULT '', created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE fact_entities (fact_id INTEGER REFERENCES facts(fact_id),
  entity_id INTEGER REFERENCES entities(entity_id), PRIMARY KEY (fact_id, entity_id));

INSERT INTO facts (content,category,tags,trust_score,retrieval_count,helpful_count,created_at,updated_at) VALUES
 ('Sam prefers metric units','user_pref','units,preferences',0.55,3,1,'2026-01-05 09:15:02','2026-01-07 18:00:00'),
 ('Project "Balcony Garden" uses drip irrigation','project','',0.5,0,0,'2026-01-05 09:20:00','2026-01-05 09:20:00'),
 ('Old guess: Sam lives in Oslo','general','',0.2,5,0,'2026-01-02 10:00:00','2026-01-06 10:00:00');
INSERT INTO entities (name) VALUES ('Balcony Garden'), ('Sam');
INSERT INTO fact_entities VALUES (2,1);
