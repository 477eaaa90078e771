#!/bin/bash
# CPU per call (getrusage, this process only: client side) of 3,000 enqueue() and 100 enqueue_many(100).
cd /work/wt/enqueue
export BENCH_MYSQL_URL=mysql://root@127.0.0.1:3306/batchq_h2
export BENCH_POSTGRESQL_URL=postgresql://postgres@127.0.0.1:5432/batchq_h2
export BENCH_SQLITE_URL=sqlite:////tmp/batchq_h2/cpu.db
for round in 1 2 3; do
  for b in $BACKENDS; do
    for side in before after; do
      if [ $side = before ]; then
        ENQ_SIDE=before .venv/bin/python bench/issue15/enq_before_run.py bench/issue15/enq_prof.py $b | sed "s/^/$round $side /"
      else
        .venv/bin/python bench/issue15/enq_prof.py $b | sed "s/^/$round $side /"
      fi
    done
  done
done
