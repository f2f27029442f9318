"""The load stage's errors. Each message is one line that names the graph (URI and database) and the cause.

    ChatmemError (contracts)
    └── LoadError                 the graph cannot be loaded (exit code 1)
        ├── GraphUnavailable      nothing answers at the URI, or the connection was lost and retries ran out
        ├── GraphAuthError        the server refused the user or password
        ├── GraphDatabaseMissing  the server has no such database
        ├── GraphWriteError       a batch failed on a non-transient error (a constraint, a bad statement, a row too big)
        └── LocalServerError      the local ArcadeDB server cannot start (no Java, a crash, no answer in time)

The stage wraps them in a StageError that adds the run and the command that re-runs it.
"""

from __future__ import annotations

from contracts.errors import ChatmemError


class LoadError(ChatmemError):
    """The graph cannot be loaded or read."""


class GraphUnavailable(LoadError):
    """Nothing answers at the URI, or the connection was lost (server down, killed, unreachable)."""


class GraphAuthError(LoadError):
    """Wrong user or password."""


class GraphDatabaseMissing(LoadError):
    """The database named in the settings does not exist on the server."""


class GraphWriteError(LoadError):
    """A batch failed on an error that retrying cannot fix."""


class LocalServerError(LoadError):
    """The local ArcadeDB Bolt server could not be started, reached or stopped."""
