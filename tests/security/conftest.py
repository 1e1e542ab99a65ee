"""The security tests reach the loopback PostgreSQL through the telemetry tests' fixtures."""

from tests.telemetry.conftest import pg_dsn, pg_schemas

__all__ = ["pg_dsn", "pg_schemas"]
