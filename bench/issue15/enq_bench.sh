#!/bin/bash
# 3 rounds; each round runs, per backend, main (before) and this branch (after), order alternating.
cd /work/wt/enqueue
. bench/issue15/enq_env.sh
for round in ${ROUNDS:-1 2 3}; do
  for b in mysql postgresql sqlite; do
    if [ $((round % 2)) = 1 ]; then order="before after"; else order="after before"; fi
    for side in $order; do
      echo "### round $round $b $side $(date -u +%H:%M:%S) $(uptime | sed 's/.*load/load/')"
      if [ $side = before ]; then
        .venv/bin/python bench/issue15/enq_before_run.py bench/vs_plain.py --backend $b --enqueue-only --enqueue 3000 --jobs 20000 --repeat 1 2>&1 | grep -E "^# rep|^\| .enqueue"
      else
        .venv/bin/python bench/vs_plain.py --backend $b --enqueue-only --enqueue 3000 --jobs 20000 --repeat 1 2>&1 | grep -E "^# rep|^\| .enqueue"
      fi
    done
  done
done
echo "### end $(date -u +%H:%M:%S) $(uptime | sed 's/.*load/load/')"
