import collections
import re
import statistics as st

# ruff: noqa: E402, SIM115
# wall ratios from the vs_plain runs
r = collections.defaultdict(list)
side = None
for line in open("bench/issue15/bench.log"):
    m = re.match(r"### round (\d) (\w+) (\w+)", line)
    if m:
        key = (m.group(2), m.group(3))
        continue
    m = re.match(r"\| `(enqueue\(\)|enqueue_many\(\))`[^|]* \| ([\d,]+) \| ([\d,]+) \| ([\d.]+)×", line)
    if m:
        r[key + (m.group(1),)].append((float(m.group(4)), m.group(2), m.group(3)))
print("wall ratios batchq/plain per round")
for k in sorted(r):
    print(k, [x[0] for x in r[k]], "median", st.median(x[0] for x in r[k]))
c = collections.defaultdict(list)
for f in ("bench/issue15/cpu.log",):
    try:
        lines = open(f)
    except FileNotFoundError:
        continue
    for line in lines:
        m = re.match(r"(\d) (\w+) (\w+) (\w+): cpu (\d+) us/call", line)
        if m:
            c[(m.group(3), m.group(2), m.group(4))].append(int(m.group(5)))
print("cpu us/call")
for k in sorted(c):
    print(k, c[k], "median", st.median(c[k]))


def table():
    names = {"mysql": "MariaDB", "postgresql": "PostgreSQL", "sqlite": "SQLite"}
    out = [
        "| wall, batchq/plain per run | before: runs | median | after: runs | median |",
        "|---|---|---|---|---|",
    ]
    for b in ("mysql", "postgresql", "sqlite"):
        for row in ("enqueue()", "enqueue_many()"):
            cells = []
            for side in ("before", "after"):
                runs = [x[0] for x in r[(b, side, row)]]
                cells += [" ".join(f"{v:.2f}" for v in runs), f"{st.median(runs):.2f}×"]
            label = f"`{row}`" + (" of 100" if "many" in row else "")
            out.append(f"| {names[b]} {label} | " + " | ".join(cells) + " |")
    return "\n".join(out)


print(table())
