"""The index database: connection settings and its append-only migrations.

``index.db`` is derived from the vault and can always be rebuilt; deleting it loses nothing.
It holds every note's text, so ``connect`` creates it 0600 in a 0700 folder and tightens looser
ones (``locations.private_database``). SQLite runs in WAL mode with one writer. Connections use
autocommit (``isolation_level=None``) and the code opens explicit transactions, so a sync is one
transaction.

Tables
------
``files``      every vault file (notes and attachments): path, title, folder, mtime, size, hash,
               word count, frontmatter JSON and its error
``properties`` one row per property value (lists give one row per item), text and number forms
``tags``       tags with their source (frontmatter or inline) and line; ``tag_lower`` makes a
               nested tag findable by its parent (``a/b`` under ``a``)
``aliases``    aliases from frontmatter
``links``      source, resolved target (or NULL) and the text as written, subpath, alias, kind
               (link, embed, property), syntax (wiki, markdown), line, and ``target_key`` (the
               file name the link depends on, used to re-resolve after adds and deletes)
``headings``, ``blocks``
``notes_fts``  FTS5 over title, aliases, headings and body (unicode61, diacritics removed; BM25)
``cjk_fts``    FTS5 trigram table holding only notes that contain CJK text, so words written
               without spaces are still findable
``chunks``     embedding chunks of each note (heading section, size-bounded) with their text
               and its hash; ``chunked_notes`` records which note version (hash) they came from
``chunk_vectors``  one float32 vector per distinct chunk text hash (the model is recorded in
               ``semantic_meta``; changing it drops every vector)
``folder_stamps``  one row per folder that has file rows (or had, at the last full sync): the
               stamp of its files as last synced, or NULL; triggers on ``files`` clear it
               whenever a row in the folder changes (see ``index/stamps.py``)
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from vaultpilot.errors import StorageError, database_advice
from vaultpilot.locations import private_database
from vaultpilot.memory.migrations import Migration, prepare, run_statements

__all__ = ["BUSY_TIMEOUT_MS", "MIGRATIONS", "connect"]


def create_core_tables(conn: sqlite3.Connection) -> None:
    run_statements(
        conn,
        """
        CREATE TABLE files (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            path_lower TEXT NOT NULL,
            folder TEXT NOT NULL,
            title TEXT NOT NULL,
            is_note INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            size INTEGER NOT NULL,
            hash TEXT,
            word_count INTEGER NOT NULL DEFAULT 0,
            frontmatter TEXT,
            frontmatter_error TEXT,
            read_error TEXT
        );
        CREATE INDEX files_folder ON files(folder);
        CREATE INDEX files_path_lower ON files(path_lower);
        CREATE INDEX files_title ON files(title COLLATE NOCASE);
        CREATE INDEX files_mtime ON files(mtime_ns);
        CREATE TABLE properties (
            file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
            key TEXT NOT NULL,
            key_lower TEXT NOT NULL,
            value TEXT,
            num REAL
        );
        CREATE INDEX properties_key ON properties(key_lower, value);
        CREATE INDEX properties_file ON properties(file_id);
        CREATE TABLE tags (
            file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
            tag TEXT NOT NULL,
            tag_lower TEXT NOT NULL,
            source TEXT NOT NULL,
            line INTEGER NOT NULL
        );
        CREATE INDEX tags_lower ON tags(tag_lower);
        CREATE INDEX tags_file ON tags(file_id);
        CREATE TABLE aliases (
            file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
            alias TEXT NOT NULL,
            alias_lower TEXT NOT NULL
        );
        CREATE INDEX aliases_lower ON aliases(alias_lower);
        CREATE INDEX aliases_file ON aliases(file_id);
        CREATE TABLE links (
            source_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
            target_id INTEGER REFERENCES files(id) ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED,
            target_text TEXT NOT NULL,
            target_key TEXT NOT NULL,
            subpath TEXT NOT NULL,
            alias TEXT,
            kind TEXT NOT NULL,
            syntax TEXT NOT NULL,
            line INTEGER NOT NULL
        );
        CREATE INDEX links_source ON links(source_id);
        CREATE INDEX links_target ON links(target_id);
        CREATE INDEX links_key ON links(target_key);
        CREATE TABLE headings (
            file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
            level INTEGER NOT NULL,
            text TEXT NOT NULL,
            line INTEGER NOT NULL
        );
        CREATE INDEX headings_file ON headings(file_id);
        CREATE TABLE blocks (
            file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
            block_id TEXT NOT NULL,
            line INTEGER NOT NULL
        );
        CREATE INDEX blocks_file ON blocks(file_id);
        """,
    )


def create_fts(conn: sqlite3.Connection) -> None:
    run_statements(
        conn,
        """
        CREATE VIRTUAL TABLE notes_fts USING fts5(
            title, aliases, headings, body,
            tokenize = 'unicode61 remove_diacritics 2'
        );
        CREATE VIRTUAL TABLE cjk_fts USING fts5(text, tokenize = 'trigram');
        """,
    )


def add_semantic_chunks(conn: sqlite3.Connection) -> None:
    # Chunks cascade with their file row, so a deleted note's chunks go in the same sync.
    # Vectors are keyed by the chunk text's hash, not by chunk: an unchanged section keeps its
    # vector when its note is re-chunked, moved or rebuilt; unreferenced vectors are collected
    # by the embedding pass (see index/semantic.py).
    run_statements(
        conn,
        """
        CREATE TABLE chunks (
            id INTEGER PRIMARY KEY,
            file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            heading TEXT NOT NULL,
            text TEXT NOT NULL,
            text_hash TEXT NOT NULL
        );
        CREATE INDEX chunks_file ON chunks(file_id, seq);
        CREATE INDEX chunks_hash ON chunks(text_hash);
        CREATE TABLE chunked_notes (
            file_id INTEGER PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
            source TEXT NOT NULL
        );
        CREATE TABLE chunk_vectors (
            id INTEGER PRIMARY KEY,
            text_hash TEXT NOT NULL UNIQUE,
            vector BLOB NOT NULL
        );
        CREATE TABLE semantic_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        """,
    )


def add_index_meta(conn: sqlite3.Connection) -> None:
    # What the note tables were built with (``parse_rules``: ``vault.parse.PARSE_RULES``); an
    # index that has no row was built before the rules were versioned.
    run_statements(conn, "CREATE TABLE index_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);")


def add_properties_to_fts(conn: sqlite3.Connection) -> None:
    # Property values are words of the note, as in Obsidian's own search (which searches the
    # whole file): a fifth column, so keyword ranking can weigh them apart. The note tables are
    # filled again at the next full sync (no parse-rules record: see ``index.sync``).
    run_statements(
        conn,
        """
        DROP TABLE notes_fts;
        CREATE VIRTUAL TABLE notes_fts USING fts5(
            title, aliases, headings, body, properties,
            tokenize = 'unicode61 remove_diacritics 2'
        );
        DELETE FROM index_meta WHERE key = 'parse_rules';
        """,
    )


_STAMP_TRIGGERS = (
    # (One statement each: ``run_statements`` splits on ";", which a trigger body contains.)
    """CREATE TRIGGER files_stamp_added AFTER INSERT ON files BEGIN
        INSERT INTO folder_stamps (folder, stamp) VALUES (new.folder, NULL)
        ON CONFLICT(folder) DO UPDATE SET stamp = NULL;
    END""",
    """CREATE TRIGGER files_stamp_removed AFTER DELETE ON files BEGIN
        UPDATE folder_stamps SET stamp = NULL WHERE folder = old.folder;
    END""",
    """CREATE TRIGGER files_stamp_changed AFTER UPDATE OF path, folder, mtime_ns, size ON files
    BEGIN
        UPDATE folder_stamps SET stamp = NULL WHERE folder = old.folder;
        INSERT INTO folder_stamps (folder, stamp) VALUES (new.folder, NULL)
        ON CONFLICT(folder) DO UPDATE SET stamp = NULL;
    END""",
)


def add_folder_stamps(conn: sqlite3.Connection) -> None:
    # A stamp per folder lets a sync that finds nothing changed skip comparing the folder's
    # files one by one. The triggers make any write to a folder's file rows, by any code or
    # process, clear its stamp, so a stamp is only ever trusted while the rows are exactly the
    # ones it was stored with; they also keep a row for every folder with files.
    run_statements(
        conn,
        """
        CREATE TABLE folder_stamps (folder TEXT PRIMARY KEY, stamp TEXT) WITHOUT ROWID;
        INSERT INTO folder_stamps (folder) SELECT DISTINCT folder FROM files;
        """,
    )
    for trigger in _STAMP_TRIGGERS:
        conn.execute(trigger)


def cover_tags(conn: sqlite3.Connection) -> None:
    # A tag filter counts and pages notes by their tags: indexes holding both the tag and the
    # note answer it from the index alone (a 50k-note vault's page of a tag: 0.69 -> 0.42 ms),
    # and make the two single-column ones redundant.
    run_statements(
        conn,
        """
        CREATE INDEX tags_lower_file ON tags(tag_lower, file_id);
        CREATE INDEX tags_file_lower ON tags(file_id, tag_lower);
        DROP INDEX tags_lower;
        DROP INDEX tags_file;
        """,
    )


MIGRATIONS: list[Migration] = [
    create_core_tables,
    create_fts,
    add_semantic_chunks,
    add_index_meta,
    add_properties_to_fts,
    add_folder_stamps,
    cover_tags,
]


BUSY_TIMEOUT_MS = 30_000


_PRAGMAS = (
    f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}",
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=NORMAL",
    "PRAGMA foreign_keys=ON",
    "PRAGMA temp_store=MEMORY",
)


def connect(path: Path, *, read_only: bool = False) -> sqlite3.Connection:
    """Open (creating if needed) the index at ``path`` and bring its schema up to date.

    Any number of connections may be open at once, one per thread (see ``index/pool.py``): WAL
    lets readers run beside the one writer, and a writer waits up to ``BUSY_TIMEOUT_MS`` for
    another (a large sync holds the write lock for its whole transaction). ``read_only`` sets
    ``query_only``, so a connection lent to read tools can never write by mistake; it also
    takes a smaller page cache, as there may be one per worker thread.
    """
    try:
        private_database(path)  # every note's text is in here: 0600 in a 0700 folder
        conn = sqlite3.connect(
            path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
        )
        cache = "PRAGMA cache_size=-16384" if read_only else "PRAGMA cache_size=-65536"
        prepare(conn, [*_PRAGMAS, cache], MIGRATIONS)
        if read_only:
            conn.execute("PRAGMA query_only=ON")
    except sqlite3.Error as exc:
        rebuild = "Delete the file: vaultpilot rebuilds the index from the vault."
        raise StorageError(
            f"Could not open the index at {path}: {exc}. "
            + database_advice(exc, path, damaged=rebuild)
        ) from None
    except OSError as exc:
        raise StorageError(
            f"Could not create the index at {path}: {exc.strerror or exc}. Check that its folder "
            "can be written, or pass another --data-dir."
        ) from None
    return conn
