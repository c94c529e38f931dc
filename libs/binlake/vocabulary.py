"""The lake's words, declared once: the columns binlake adds to the tables it writes, the ops of bronze's rows and
the checkpoint row of a whole source. Every module imports them from here (``tests/test_vocabulary.py`` fails
when one of these literals is written in another module). Imports nothing, so any package can import it."""

# --- columns binlake adds (a source column may not take a name with this prefix) ---
RESERVED_PREFIX = "_binlake_"
SEQ_COL = "_binlake_seq"  # the ordering key: (file_seq, pos, row) packed (pipeline.identity.ordering_key)
OP_COL = "_binlake_op"  # silver and history: the op of the change that wrote the row (delete: a tombstone)
DUP_COL = "_binlake_dup"  # silver tables without a primary key: which of the equal rows
COUNT_COL = "_binlake_count"  # history tables of tables without a primary key: equal rows at that version
KEY_COL = "_binlake_key"  # history: the row's key (fold.row_key)
COMMIT_TS_COL = "_binlake_commit_ts"  # history: the commit time of the change (microseconds, UTC)

# --- ops: bronze's ``op`` column ---
INSERT_OP = "insert"
UPDATE_OP = "update"
DELETE_OP = "delete"
CHANGE_OPS = (INSERT_OP, UPDATE_OP, DELETE_OP)
LAYOUT_OP = "layout"  # a table's TABLE_MAP layout (columns, primary key)
DDL_OP = "ddl"  # a statement that changes a table
ERROR_OP = "error"  # an undecodable stretch (quarantined)
CHUNK_END_OP = "chunk_end"  # the end of a chunk of a file (its counts)
FILE_END_OP = "file_end"  # the end of a file (its counts, the ingest's resume point)
END_OPS = (FILE_END_OP, CHUNK_END_OP)
BRONZE_OPS = (*CHANGE_OPS, LAYOUT_OP, DDL_OP, ERROR_OP, CHUNK_END_OP, FILE_END_OP)
KEY_CHANGE_OP = "key_change"  # a fold counter, not a bronze op: an update that changes the primary key

# --- meta.checkpoints and meta.run_metrics: the row of a whole source (``table_name``) ---
SOURCE_ROW = "*"
