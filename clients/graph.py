"""The connection to the graph: one neo4j driver, one explicit transaction per batch, retries on transient errors.

`is_transient` is the one predicate that decides what is retried. Everything else fails at once, as a LoadError
whose single line names the URI, the database and the cause. The password lives in the driver's auth only: it is
never part of a message, a log line or a staging row.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from neo4j import Driver, GraphDatabase
from neo4j.exceptions import (
    AuthError,
    ClientError,
    ConfigurationError,
    ConstraintError,
    DriverError,
    Neo4jError,
    ServiceUnavailable,
    SessionExpired,
    TransientError,
)

from clients.graph_errors import GraphAuthError, GraphDatabaseMissing, GraphUnavailable, GraphWriteError, LoadError
from clients.retry import retrying
from contracts.redact import redact_uri

log = logging.getLogger(__name__)

Dialect = Literal["neo4j", "arcadedb"]


@dataclass(frozen=True)
class Target:
    """Where the graph is. `key` names it in staging (the manifest and watermark are per target)."""

    uri: str
    user: str
    password: str = field(repr=False)
    database: str | None
    key: str
    local: bool = False

    def describe(self) -> str:
        return f"{redact(self.uri)} (database {self.database or 'default'})"


def redact(uri: str) -> str:
    """The URI without any user:password@ part."""
    return redact_uri(uri) or ""


def is_transient(exc: BaseException) -> bool:
    """True for the errors a batch is retried on; the only place that decides it.

    - the connection was refused or lost (ServiceUnavailable, SessionExpired): the server restarts, a network
      blip. This includes IncompleteCommit (the commit may or may not have happened): every batch is idempotent
      (MERGE on stable ids, or CREATE under a uniqueness constraint that falls back to MERGE), so sending it
      again cannot duplicate anything;
    - Neo.TransientError.* (deadlock, lock timeout, leader switch; ArcadeDB reports a concurrent modification of
      a page as DeadlockDetected) and whatever else the driver calls retryable.
    Authentication, a missing database, a constraint or a Cypher error are not transient: retrying cannot help.
    """
    if isinstance(exc, AuthError | ConfigurationError):
        return False
    if isinstance(exc, ServiceUnavailable | SessionExpired | TransientError):
        return True
    return isinstance(exc, Neo4jError | DriverError) and exc.is_retryable()


def cause(exc: BaseException) -> str:
    """A one-line cause from a driver error (its server message, not the driver's multi-line dump)."""
    if isinstance(exc, Neo4jError):
        text = exc.message or str(exc)
        code = exc.code or type(exc).__name__
        return f"{code}: {' '.join(text.split())}"
    text = " ".join(str(exc).split()) or type(exc).__name__
    reason = re.search(r"\(reason (.+?)\)\s*$", text)  # "Couldn't connect to H (resolved to ...): ... (reason X)"
    if reason is not None:
        text = f"{text.split(' (resolved', 1)[0]}: {reason.group(1)}"
    return f"{type(exc).__name__}: {text[:300]}"


def classify(target: Target, exc: BaseException) -> LoadError:
    """The LoadError a connection or query failure stands for, in one line naming the graph."""
    where = f"graph {target.describe()}"
    if isinstance(exc, AuthError):
        return GraphAuthError(f"{where}: authentication failed for user {target.user!r} ({cause(exc)})")
    if isinstance(exc, ClientError) and (exc.code or "").startswith("Neo.ClientError.Database.DatabaseNotFound"):
        return GraphDatabaseMissing(f"{where}: no such database ({cause(exc)})")
    if isinstance(exc, ServiceUnavailable | SessionExpired | OSError):
        return GraphUnavailable(f"{where}: server unavailable ({cause(exc)})")
    return GraphWriteError(f"{where}: {cause(exc)}")


class Graph:
    """A driver bound to one target. Use as a context manager; `check()` first."""

    def __init__(self, target: Target, *, connect_timeout_s: float = 10.0) -> None:
        self.target = target
        self.dialect: Dialect = "neo4j"
        self._driver: Driver = GraphDatabase.driver(
            target.uri,
            auth=(target.user, target.password),
            connection_timeout=connect_timeout_s,
            connection_acquisition_timeout=connect_timeout_s * 2,
            max_transaction_retry_time=0,  # retries are ours (is_transient), never the driver's
            notifications_min_severity="OFF",
            user_agent="chatmem-load",
        )

    def __enter__(self) -> Graph:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._driver.close()

    def check(self) -> None:
        """Connect, authenticate and open the database, or raise the LoadError that says which one failed.

        Auto-commit, no retries: a server that is down or a wrong password is reported at once.
        """
        try:
            self._driver.verify_connectivity()
            agent = self._driver.get_server_info().agent
            self.dialect = "arcadedb" if "arcadedb" in agent.lower() else "neo4j"
            with self._driver.session(database=self.target.database) as session:
                session.run("RETURN 1 AS ok").consume()
        except (Neo4jError, DriverError, OSError) as exc:
            raise classify(self.target, exc) from None

    def run(self, query: str, **params: Any) -> list[dict[str, Any]]:
        """One auto-commit read or schema statement; errors classified."""
        try:
            with self._driver.session(database=self.target.database) as session:
                return [record.data() for record in session.run(query, params)]
        except (Neo4jError, DriverError, OSError) as exc:
            raise classify(self.target, exc) from None

    def write(self, query: str, rows: Sequence[dict[str, Any]]) -> int:
        """One batch in one explicit transaction. Returns the `written` count the statement reports."""
        with self._driver.session(database=self.target.database) as session, session.begin_transaction() as tx:
            record = tx.run(query, rows=list(rows)).single()
            tx.commit()
        return 0 if record is None else int(record["written"])

    def write_retrying(
        self,
        query: str,
        rows: Sequence[dict[str, Any]],
        *,
        retries: int,
        backoff_s: float,
        on_retry: Callable[[int, str], None] | None = None,
        on_conflict: str | None = None,
        retry_as: str | None = None,
    ) -> int:
        """`write`, retried up to `retries` times on a transient error with doubling waits; else a LoadError.

        `on_conflict`: the statement to send instead when this one breaks a uniqueness constraint (the
        optimistic CREATE of new nodes falls back to MERGE; see load/cypher.py, point 3).
        `retry_as`: the statement every retry sends instead (a lost connection may have committed the first
        attempt: a CREATE of relationships, which no constraint guards, is retried as MERGE; point 5 there).
        """
        fallback = on_conflict

        def send(attempt: int) -> int:
            nonlocal query, fallback
            if attempt > 1 and retry_as is not None:
                query = retry_as
            try:
                return self.write(query, rows)
            except ConstraintError as exc:
                if fallback is None:
                    raise classify(self.target, exc) from None
                log.info("load - %d row(s) exist already (%s): sent again as MERGE", len(rows), cause(exc))
                query, fallback = fallback, None
                return self.write(query, rows)  # its transient errors are retried like any other

        def retried(error: BaseException, attempt: int, will_retry: bool) -> None:
            if will_retry:
                log.warning("load - transient error, retry %d/%d: %s", attempt, retries, cause(error))
                if on_retry is not None:
                    on_retry(attempt, cause(error))

        try:
            return retrying(
                send,
                transient=lambda exc: isinstance(exc, Neo4jError | DriverError | OSError) and is_transient(exc),
                delay=lambda exc, attempt: backoff_s * 2 ** (attempt - 1),
                max_retries=retries,
                on_error=retried,
                sleep=lambda seconds: time.sleep(seconds),  # looked up at call time: tests may patch time.sleep
            )
        except LoadError:
            raise
        except (Neo4jError, DriverError, OSError) as exc:
            raise classify(self.target, exc) from None

    def graph_counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """Every label's and relationship type's count in the graph.

        ArcadeDB answers apoc.meta.stats from its type counters; Neo4j counts per label and type.
        """
        if self.dialect == "arcadedb":
            value = self.run("CALL apoc.meta.stats()")[0]["value"]
            nodes = {str(k): int(v) for k, v in value.get("labels", {}).items() if "~" not in str(k)}
            return nodes, {str(k): int(v) for k, v in value.get("relTypes", {}).items()}
        labels = [row["label"] for row in self.run("CALL db.labels() YIELD label RETURN label")]
        types = [row["t"] for row in self.run("CALL db.relationshipTypes() YIELD relationshipType AS t RETURN t")]
        nodes = {label: int(self.run(f"MATCH (n:`{_quote(label)}`) RETURN count(n) AS n")[0]["n"]) for label in labels}
        edges = {t: int(self.run(f"MATCH ()-[r:`{_quote(t)}`]->() RETURN count(r) AS n")[0]["n"]) for t in types}
        return nodes, edges


def _quote(name: str) -> str:
    """Backtick-quote a label read back from the server (it may be anyone's label, not one of ours)."""
    return name.replace("`", "``")
