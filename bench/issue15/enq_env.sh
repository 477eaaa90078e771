export BENCH_MYSQL_URL=mysql://root@127.0.0.1:3306/batchq_h2_bench
export BENCH_POSTGRESQL_URL=postgresql://postgres@127.0.0.1:5432/batchq_h2_bench
export BENCH_SQLITE_URL=sqlite:////tmp/batchq_h2/bench.db
