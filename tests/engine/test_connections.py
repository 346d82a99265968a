"""A 16-worker fleet fits PostgreSQL's default connection limit (issue 31): each process's
pool opens at most PROCESS_CONNECTIONS, even with every one of them busy at once."""
from __future__ import annotations

import os
import threading
from contextlib import ExitStack

from conftest import server_only
from db import scalar, sql
from hermes_cmms.store._postgres import PROCESS_CONNECTIONS
from hermes_cmms.store.store import Store

WORKERS = 16
DEFAULT_MAX_CONNECTIONS, SUPERUSER_RESERVED = 100, 3  # PostgreSQL's defaults


@server_only
def test_sixteen_workers_at_their_busiest_stay_within_the_default_limit(home):
    url = os.environ["CMMS_DATABASE_URL"]
    database = scalar(url, "SELECT current_database()")
    # the server in the tests allows more; this database is held to what a default server leaves
    sql(url, f"ALTER DATABASE {database} CONNECTION LIMIT {DEFAULT_MAX_CONNECTIONS - SUPERUSER_RESERVED}")
    stores = [Store(url) for _ in range(WORKERS)]  # one engine a worker process, as each opens it
    every = WORKERS * PROCESS_CONNECTIONS
    held, counted, errors = threading.Barrier(every + 1), threading.Barrier(every + 1), []

    def busy(store: Store) -> None:  # a connection checked out and in use, until all are counted
        try:
            with store.engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1")
                held.wait(60)
                counted.wait(60)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=busy, args=(s,)) for s in stores for _ in range(PROCESS_CONNECTIONS)]
    with ExitStack() as closing:
        for store in stores:
            closing.callback(store.close)
        for thread in threads:
            thread.start()
        held.wait(60)
        open_now = scalar(url, "SELECT count(*) FROM pg_stat_activity WHERE datname = ? "
                               "AND application_name = 'hermes-cmms'", database)
        counted.wait(60)
        for thread in threads:
            thread.join()
    assert not errors, errors[0]
    assert open_now == every
    # room left beside them for two bridges and a CLI run, each at its own busiest
    assert every + 3 * PROCESS_CONNECTIONS <= DEFAULT_MAX_CONNECTIONS - SUPERUSER_RESERVED
