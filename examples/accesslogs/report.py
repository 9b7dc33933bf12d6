"""Reading the pipeline's Parquet output back with Spark, and printing the run's summary."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from accesslogs.parsing import parse_line


@dataclass
class TrafficSummary:
    """Totals over every batch of a run (partial per-batch aggregates summed)."""

    requests: int
    bytes: int
    server_errors: int
    client_errors: int
    batches: int
    minutes: int
    busiest_minute: str
    busiest_minute_requests: int
    top_paths: list[dict[str, Any]]
    status_mix: dict[str, int]

    def to_doc(self) -> dict[str, Any]:
        return asdict(self)


def summarize_traffic(spark: Any, path: str, top: int = 8) -> TrafficSummary:
    """Sum the per-batch aggregates under ``path`` (``batch_id=*`` Parquet directories).

    One Spark job: the aggregates summed per (UTC minute, path, status) with the batch ids seen,
    collected to the driver (a few rows per path and minute) and totalled there. The reporter runs
    this while its worker stops, within the supervisor's grace; each further Spark action would
    add a round of task scheduling (seconds apiece on a loaded cluster)."""
    from pyspark.sql import functions as F

    rows = (spark.read.parquet(path)
            .groupBy(F.date_format("minute", "yyyy-MM-dd HH:mm").alias("minute"), "path", "status")
            .agg(F.sum("requests").alias("requests"), F.sum("bytes").alias("bytes"),
                 F.collect_set("batch_id").alias("batch_ids"))
            .collect())
    batches: set[int] = set()
    per_minute: Counter[str] = Counter()
    per_status: Counter[int] = Counter()
    per_path: dict[str, Counter[str]] = {}
    for row in rows:
        requests, status = int(row["requests"]), int(row["status"])
        batches.update(int(b) for b in row["batch_ids"])
        per_minute[row["minute"]] += requests
        per_status[status] += requests
        figures = per_path.setdefault(row["path"], Counter())
        figures["requests"] += requests
        figures["bytes"] += int(row["bytes"])
        figures["server_errors"] += requests if status >= 500 else 0
        figures["client_errors"] += requests if 400 <= status < 500 else 0
    busiest = min(per_minute.items(), key=lambda kv: (-kv[1], kv[0]), default=("-", 0))
    paths = sorted(per_path.items(), key=lambda kv: (-kv[1]["requests"], kv[0]))[:top]
    return TrafficSummary(
        requests=sum(per_status.values()), bytes=sum(f["bytes"] for f in per_path.values()),
        server_errors=sum(f["server_errors"] for f in per_path.values()),
        client_errors=sum(f["client_errors"] for f in per_path.values()),
        batches=len(batches), minutes=len(per_minute),
        busiest_minute=f"{busiest[0]} UTC", busiest_minute_requests=busiest[1],
        top_paths=[{"path": name, **{k: f[k] for k in
                                     ("requests", "bytes", "server_errors", "client_errors")}}
                   for name, f in paths],
        status_mix={str(status): n for status, n in sorted(per_status.items())})


def accounting_ok(lines: int, malformed: int, requests: int, batch_records: int) -> bool:
    """The pipeline's accounting check: every line read is either a request in the Parquet output
    or a malformed line, and the requests in Parquet are exactly the records of the batches that
    were acked — so no record is lost and none is counted twice."""
    return requests + malformed == lines and requests == batch_records


def expected_aggregates(lines: Iterable[str]) -> tuple[dict[tuple[str, str, int], tuple[int, int]], int]:
    """What the pipeline's aggregation must produce from ``lines``, recomputed in plain Python:
    (UTC minute ``HH:MM``, path, status) -> (requests, bytes), and the number of malformed lines."""
    requests: Counter[tuple[str, str, int]] = Counter()
    size: Counter[tuple[str, str, int]] = Counter()
    malformed = 0
    for line in lines:
        rec = parse_line(line)
        if rec is None:
            malformed += 1
            continue
        key = (datetime.fromtimestamp(rec.ts, UTC).strftime("%H:%M"), rec.path, rec.status)
        requests[key] += 1
        size[key] += rec.bytes
    return {k: (n, size[k]) for k, n in requests.items()}, malformed


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:5.1f}%" if whole else "   - "


def format_report(doc: dict[str, Any]) -> str:
    """The human-readable summary of a run (``doc`` as written to summary.json)."""
    lines_total = doc.get("lines") or 0
    malformed = doc.get("malformed") or 0
    t = doc.get("traffic")
    out = ["", "=== access-log pipeline summary " + "=" * 46]
    out.append(f"log lines read       {lines_total:>10,}   (acked {doc.get('acked') or 0:,}, "
               f"failed and replayed {doc.get('failed') or 0:,})")
    out.append(f"malformed lines      {malformed:>10,}   ({_pct(malformed, lines_total).strip()}, "
               "counted and dropped)")
    for sample in doc.get("malformed_samples") or []:
        out.append(f"    e.g. {sample!r}")
    if not t:
        out.append("no traffic output was written")
        return "\n".join(out)
    requests = t["requests"]
    check = ("OK" if accounting_ok(lines_total, malformed, requests,
                                   doc.get("batch_records") or 0) else "MISMATCH")
    out.append(f"requests in Parquet  {requests:>10,}   (records of acked batches "
               f"{doc.get('batch_records') or 0:,})")
    out.append(f"accounting check     requests + malformed == lines, each counted once: {check}")
    out.append(f"bytes served         {t['bytes']:>10,}   ({t['bytes'] / 2**20:.1f} MiB)")
    out.append(f"5xx / 4xx            {t['server_errors']:>10,} / {t['client_errors']:,}   "
               f"({_pct(t['server_errors'], requests).strip()} / "
               f"{_pct(t['client_errors'], requests).strip()})")
    out.append(f"minutes / batches    {t['minutes']:>10,} / {t['batches']:,}   (busiest "
               f"{t['busiest_minute']}: {t['busiest_minute_requests']:,} requests)")
    out.append("")
    out.append(f"  {'top paths':<22}{'requests':>10}{'share':>8}{'MiB':>9}{'5xx':>6}{'4xx':>6}")
    for p in t["top_paths"]:
        out.append(f"  {p['path']:<22}{p['requests']:>10,}{_pct(p['requests'], requests):>8}"
                   f"{p['bytes'] / 2**20:>9.1f}{p['server_errors']:>6}{p['client_errors']:>6}")
    out.append("")
    mix = "  ".join(f"{s}: {n:,} ({_pct(n, requests).strip()})" for s, n in t["status_mix"].items())
    out.append(f"  status mix  {mix}")
    out.append(f"  processed in {doc.get('seconds', 0):.1f}s; Parquet under {doc.get('run_dir')}")
    out.append("=" * 78)
    return "\n".join(out)
