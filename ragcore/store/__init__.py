"""PostgreSQL: the embedded server's life cycle (`server`), the connection pool and its recovery
(`database`), numbered migrations (`migrations`, SQL in sql/), connection-string redaction
(`redaction`), the embedding space (`embedding_space`), and the per-role partial indexes (HNSW
graphs on chunks, posting lists) with the role predicate they share with retrieval
(`role_indexes`), where it writes and how much room is left (`storage_space`), and why the embedded
server would not start (`start_failure`: `EmbeddedStartError.kind`).
"""

from ragcore.store.database import (
    Database,
    ServerInfo,
    database_url,
    drop_namespace,
    open_database,
    open_read_database,
)
from ragcore.store.embedding_space import (
    REEMBED_COMMAND,
    EmbeddingModelMismatch,
    EmbeddingSpace,
    current_embedding_space,
    ensure_embedding_space,
    lock_embedding_space,
    replace_embedding_space,
)
from ragcore.store.errors import DatabaseError, DatabaseUnavailable, EmbeddedStartError
from ragcore.store.migrations import apply_migrations, migrate, migration_files, migration_status
from ragcore.store.redaction import redact_dsn, redact_message
from ragcore.store.role_indexes import (
    create_role_indexes,
    embedding_indexes,
    posting_indexes,
    reader_bit,
    reader_bits,
    role_predicate,
    window_embedding_indexes,
)
from ragcore.store.server import (
    PG_VERSION,
    embedded_data_dir,
    embedded_running_url,
    embedded_url,
    pg_tool,
    restart_embedded,
    stop_embedded,
    storage_space,
)

__all__ = [
    # database: The connection pool on one namespace and its recovery when the server stops …
    "Database",
    "database_url",
    "drop_namespace",
    "open_database",
    "open_read_database",
    "ServerInfo",
    # embedding_space: The embedding space
    "current_embedding_space",
    "EmbeddingModelMismatch",
    "EmbeddingSpace",
    "ensure_embedding_space",
    "lock_embedding_space",
    "REEMBED_COMMAND",
    "replace_embedding_space",
    # errors: The store's errors
    "DatabaseError",
    "DatabaseUnavailable",
    "EmbeddedStartError",
    # migrations: Numbered migrations
    "apply_migrations",
    "migrate",
    "migration_files",
    "migration_status",
    # redaction: Connection strings in messages
    "redact_dsn",
    "redact_message",
    # role_indexes: Per-reader partial indexes and the one role predicate they share with retrieval
    "create_role_indexes",
    "embedding_indexes",
    "posting_indexes",
    "reader_bit",
    "reader_bits",
    "role_predicate",
    "window_embedding_indexes",
    # server: The embedded PostgreSQL server's life cycle
    "embedded_data_dir",
    "embedded_running_url",
    "embedded_url",
    "pg_tool",
    "PG_VERSION",
    "restart_embedded",
    "stop_embedded",
    "storage_space",
]
