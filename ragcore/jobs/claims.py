"""Claims: a piece of work (a job's attempt, a document's quote sentences) runs in one place at a time.

Several processes may run job workers (the app and `make api` each run one unless
WORKER_IN_APP=false, plus any `python -m ragcore worker`). The queue hands each job to one
worker, but two jobs can still reach the same work: an upload filling its document's quote
sentences while a starting worker queues the sentences of every document still without them
(`queue_unwarmed_quotes`), or a retried job whose earlier attempt is still alive somewhere.

A claim is a PostgreSQL session-level advisory lock, taken without waiting, on a connection of
the claimant's own (`Database.own_connection`), held while the work runs. The server drops it
when that connection ends, so a worker that dies leaves no stale claim behind, which a row in a
table would. The key names the namespace, so the lab's namespaces never block the app's work.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from ragcore.store import Database

JOB_ATTEMPT = "job"  # key: the jobs row's id
QUOTE_SENTENCES = "quotes"  # key: a document's id


def _name(db: Database, what: str, key: int) -> str:
    return f"dayanak-claim:{db.namespace}:{what}:{int(key)}"


@contextmanager
def claim(db: Database, what: str, keys: Iterable[int]) -> Iterator[list[int]]:
    """Claim `what` for each key; the block gets the keys claimed here (in the given order),
    leaving out those someone else holds. Every claim ends with the block."""
    with db.own_connection() as conn:
        won = [key for key in dict.fromkeys(int(k) for k in keys)
               if conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))",
                               (_name(db, what, key),)).fetchone()[0]]
        yield won


def held(db: Database, what: str, keys: Iterable[int]) -> set[int]:
    """The keys someone (any process, this one included) holds a claim on now.

    A session-level advisory lock on one bigint appears in `pg_locks` with the key's high 32 bits
    as `classid`, its low 32 bits as `objid` and `objsubid` 1."""
    wanted = list(dict.fromkeys(int(k) for k in keys))
    if not wanted:
        return set()
    with db.connection() as conn:
        rows = conn.execute(
            """SELECT k.key
                 FROM unnest(%(keys)s::bigint[]) AS k(key)
                 JOIN pg_locks l
                   ON l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
                  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                  AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended(%(prefix)s || k.key, 0)""",
            {"keys": wanted, "prefix": _name(db, what, 0)[:-1]},
        ).fetchall()
    return {row[0] for row in rows}
