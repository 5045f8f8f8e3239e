"""Flink SQL session windows for bench_flink.py, run by the Python of Flink's own virtual
environment (PyFlink pins its own pyarrow and py4j): this file imports nothing of windowstore.

It starts PyFlink's Java gateway (a JVM) once, prints ``{"ready": true}``, then reads one JSON
request a line on standard input and answers each with one JSON line. A request is a streaming
job: a CSV file source (``user_id, ts, amount``, ``ts`` epoch milliseconds) with an event-time
attribute on ``ts`` and a watermark ``delay_ms`` behind it, the ``SESSION`` window table function
of gap ``gap_ms`` by ``user_id``, count/sum/min/max of ``amount``, into a CSV filesystem sink in
``output`` (``user_id, window_start, window_end, count, sum, min, max``, times as UTC
timestamps). The answer holds ``job_s`` (from the statement's submission to the job's end:
planning, the local mini-cluster's start, the job, the sink's files committed) and ``net_s``
(Flink's own net runtime of the job). An empty line or the end of input ends the process.
"""

from __future__ import annotations

import json
import sys
import time

from pyflink.java_gateway import get_gateway
from pyflink.table import EnvironmentSettings, TableEnvironment


def interval(ms: int) -> str:
    """A Flink SQL interval literal of ``ms`` milliseconds (a SECOND interval holds two digits
    of seconds only)."""
    days, rest = divmod(ms, 86_400_000)
    hours, rest = divmod(rest, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    return (
        f"INTERVAL '{days} {hours:02d}:{minutes:02d}:{seconds:02d}.{millis:03d}' DAY TO SECOND(3)"
    )


def run(request: dict[str, object]) -> dict[str, float]:
    """One job (a fresh table environment: its parallelism is its own)."""
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    config = env.get_config()
    config.set("parallelism.default", str(request["parallelism"]))
    config.set("table.local-time-zone", "UTC")
    # 0: the watermark follows every record, instead of every 200 ms of wall time, so that which
    # records are late does not depend on how fast the job runs.
    config.set("pipeline.auto-watermark-interval", "0")
    env.execute_sql(
        f"""
        CREATE TABLE clicks (
            user_id STRING, ts BIGINT, amount DOUBLE,
            rowtime AS TO_TIMESTAMP_LTZ(ts, 3),
            WATERMARK FOR rowtime AS rowtime - {interval(int(str(request["delay_ms"])))}
        ) WITH ('connector' = 'filesystem', 'path' = '{request["input"]}', 'format' = 'csv')
        """
    )
    env.execute_sql(
        f"""
        CREATE TABLE sessions (
            user_id STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3),
            n BIGINT, sum_amount DOUBLE, min_amount DOUBLE, max_amount DOUBLE
        ) WITH ('connector' = 'filesystem', 'path' = '{request["output"]}', 'format' = 'csv')
        """
    )
    gap = interval(int(str(request["gap_ms"])))
    start = time.perf_counter()
    result = env.execute_sql(
        f"""
        INSERT INTO sessions
        SELECT user_id, window_start, window_end, COUNT(*), SUM(amount), MIN(amount),
               MAX(amount)
        FROM TABLE(SESSION(TABLE clicks PARTITION BY user_id, DESCRIPTOR(rowtime), {gap}))
        GROUP BY user_id, window_start, window_end
        """
    )
    result.wait()
    job_s = time.perf_counter() - start
    client = result.get_job_client()
    assert client is not None
    net_ms = client.get_job_execution_result().result().get_net_runtime()
    return {"job_s": job_s, "net_s": net_ms / 1000}


def main() -> None:
    get_gateway()  # starts the JVM
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            break
        print(json.dumps(run(json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
