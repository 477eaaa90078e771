#!/usr/bin/env bash
# Every benchmark on MariaDB, SQLite and PostgreSQL, one after the other (never two at once: 2 cores).
# Tables go to stdout and bench/results/*.md (gitignored); progress lines to bench/results/log.txt.
#   bench/run_all.sh            # full run, about 21 minutes on a 2-core VM (1,042 s measured
#                               # with 10,000-job batch drains; 50,000 add about 4 minutes)
#   bench/run_all.sh --quick    # smoke run, about 4 minutes (measured: 223 s for all three backends)
# PY=/path/to/python bench/run_all.sh uses another interpreter (default: the repo's .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
mkdir -p bench/results
mysql -uroot -h127.0.0.1 -e 'CREATE DATABASE IF NOT EXISTS batchq_bench' 2>/dev/null || true
# PostgreSQL: batchq's database and the peers' (from BENCH_POSTGRESQL_URL), created if missing.
$PY - <<'PY' || true
import sys; sys.path.insert(0, "bench")
from settings import url_for
from peers import ensure_database, peer_url
for url in (url_for("postgresql"), peer_url("procrastinate"), peer_url("pgqueuer")):
    ensure_database(url)
PY
if [[ "${1:-}" == "--quick" ]]; then
  Q=(--quick)
  PROC_MYSQL=(--quick); PROC_SQLITE=(--quick); PROC_PG=(--quick)
  BATCH=(--quick); SCALE=(--quick); ENQ=(--quick); CRON=(--quick); LAT=(--quick)
else
  Q=()
  PROC_MYSQL=(--jobs 4000 --procs 1,2,4 --repeat 3)
  PROC_SQLITE=(--jobs 10000 --procs 1,2,4 --repeat 3)
  PROC_PG=(--jobs 4000 --procs 1,2,4 --repeat 3)
  BATCH=(--jobs 50000 --single-jobs 1000 --procs 1,2,4 --repeat 3)
  SCALE=(--claims 400 --repeat 3 --big 1000000)
  ENQ=(--n 2000 --batches 100 --repeat 3)
  CRON=(--repeat 20)
  LAT=(--jobs 10 --poll 1,0.1 --repeat 3)
fi
start=$(date +%s)
{
  echo "# batchq benchmark run $(date -u '+%Y-%m-%d %H:%M UTC') ($(git rev-parse --short HEAD))"
  echo
  $PY - <<'PY'
import sys; sys.path.insert(0, "bench")
from machine import machine_info, server_info
for k, v in machine_info().items(): print(f"- {k}: {v}")
for b in ("mysql", "sqlite", "postgresql"):
    print(f"- {b}: " + ", ".join(f"{k}={v}" for k, v in server_info(b).items()))
print()
PY
  for b in mysql sqlite postgresql; do
    $PY bench/enqueue.py --backend $b "${ENQ[@]}"
    case $b in
      mysql) $PY bench/process.py --backend $b "${PROC_MYSQL[@]}" ;;
      sqlite) $PY bench/process.py --backend $b "${PROC_SQLITE[@]}" ;;
      postgresql) $PY bench/process.py --backend $b "${PROC_PG[@]}" ;;
    esac
    $PY bench/batch.py --backend $b "${BATCH[@]}"
    $PY bench/scale.py --backend $b "${SCALE[@]}"
    $PY bench/cron.py --backend $b "${CRON[@]}"
    $PY bench/latency.py --backend $b "${LAT[@]}"
  done
  echo "Total wall time: $(( $(date +%s) - start )) s"
} 2> bench/results/log.txt | tee bench/results/all.md
