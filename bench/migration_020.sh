#!/usr/bin/env bash
# How long `batchq init-db` takes to apply migration 020 to a live-sized job table
# (docs/how-to/upgrading.md): the code of migration 019 (commit 89ee961, from git) creates the
# schema and enqueues JOBS jobs, then this checkout's `batchq -v init-db` migrates, timed from
# process start to exit. One round per backend; run it twice or more, the disk is noisy.
#   bench/migration_020.sh [JOBS]      (default 200000; needs .venv, MariaDB and PostgreSQL)
# Databases: BENCH_MYSQL_URL, BENCH_POSTGRESQL_URL (default batchq_bench_migration on the local servers),
# dropped and created again; SQLite in a temporary folder.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${1:-200000}"
root="$(pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/batchq-migration.XXXXXX")"
git archive 89ee961 batchq sql | tar -x -C "$work"
cp -r "$work/sql" "$work/batchq/sql"   # batchq.sql: the old code reads its own SQL
cat > "$work/jobs.py" <<'PY'
def send_mail(payload):
    pass
PY
old() { (cd "$work" && PYTHONPATH="$work" "$root/.venv/bin/python" -c \
    'import sys; from batchq.cli import cli; sys.argv[0] = "batchq"; sys.exit(cli())' "$@"); }
fill() { (cd "$work" && PYTHONPATH="$work" "$root/.venv/bin/python" - "$1" "$jobs" <<'PY'
import sys
from batchq import Queue
q = Queue(sys.argv[1])
for _ in range(int(sys.argv[2]) // 10000):
    q.enqueue_many("jobs:send_mail", [{"to": "x@example.com"}] * 10000)
PY
); }
mysql_url="${BENCH_MYSQL_URL:-mysql://root@127.0.0.1:3306/batchq_bench_migration}"
pg_url="${BENCH_POSTGRESQL_URL:-postgresql://postgres@127.0.0.1:5432/batchq_bench_migration}"
export BATCHQ_TASK_MODULES=jobs
for url in "sqlite:///$work/m.db" "$mysql_url" "$pg_url"; do
  case "$url" in
    mysql*) db="${url##*/}"; mysql -uroot -h127.0.0.1 -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db" ;;
    postgresql*) db="${url##*/}"; psql -q -h127.0.0.1 -Upostgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" 2>/dev/null ;;
  esac
  BATCHQ_URL="$url" old init-db
  fill "$url"
  start=$(date +%s.%N)
  BATCHQ_URL="$url" .venv/bin/batchq -v init-db 2>/dev/null
  end=$(date +%s.%N)
  printf '%s: migration 020 over %s jobs: %.2f s\n' "${url%%:*}" "$jobs" "$(echo "$end - $start" | bc)"
done
rm -rf "$work"
