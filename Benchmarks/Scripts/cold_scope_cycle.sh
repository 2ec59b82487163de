#!/usr/bin/env bash
# What one request scope cycle costs with cold caches: the instructions, the code and data lines it
# fetches from memory and the allocations it makes (each costs a server more than the work around it),
# per cycle, for the open + close of a seeded scope and for open + resolve + close
# (Sources/ColdScopeCycle), and for the same request scope written by hand (`handwritten`: one object
# holding the seeds, the service made under a `Mutex` on first use; the floor any request scope pays),
# and for `minimal` (``MinimalGraph``): the least a container's scope does beyond the hand-written one
# (registered with its container under a lock, a handle, boxed seeds, a type-erased factory), the same
# allocations as the graph's: the yardstick for the graph's cycle.
# Each scope is seeded as the example server's request scopes are: with one seed, the request's logger.
# The `-phases` rows make the caches cold before each of open, resolve and close, as a server's request
# does (a middleware opens the scope, the handler uses it, the middleware closes it, other code between):
# code the phases share (the lock, reference counting, allocation) is then fetched once per phase.
# The `-route` rows make them cold before open and before close only: a route's handler opens its
# scope and resolves at once, does its work, then closes (the example server's request scopes).
# Counted by callgrind's cache simulation, with first-level caches too small to
# hold anything between two accesses, so that each line a cycle touches counts once as a miss of the
# last level: stable on a noisy machine, unlike the timings, and what a server's request pays.
#
#   Scripts/cold_scope_cycle.sh                 # the table
#   FUNCTIONS=full Scripts/cold_scope_cycle.sh  # and the lines of each function, for that mode
#
# Each figure is (70 cycles - 10 cycles) / 60, less the cache sweep's own, so that the first cycle's
# one-time work (metadata, the scope layout) is left out.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind >/dev/null; }
scratch="${SCRATCH:-.build}"
swift build -c release --scratch-path "$scratch" --product ColdScopeCycle >/dev/null
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# valgrind 3.19 cannot read the DWARF 5 the toolchain writes: symbols only.
cp "$(swift build -c release --scratch-path "$scratch" --show-bin-path)/ColdScopeCycle" "$work/cycle"
strip --strip-debug "$work/cycle"

run() { # mode count: the summary line's events
    valgrind --tool=callgrind --cache-sim=yes --I1=1024,2,64 --D1=1024,2,64 --LL=4194304,16,64 \
        --callgrind-out-file="$work/$1.$2.out" "$work/cycle" "$1" "$2" >/dev/null 2>"$work/$1.$2.err" \
        || { cat "$work/$1.$2.err" >&2; exit 1; }
    sed -n 's/^summary: //p' "$work/$1.$2.out"
}
per_cycle() { # mode: Ir ILmr DLmr DLmw allocations per cycle
    python3 - "$(run "$1" 10)" "$(run "$1" 70)" "$work/$1.10.out" "$work/$1.70.out" <<'PY'
import re, sys
# Events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
a, b = (list(map(int, s.split())) for s in sys.argv[1:3])
d = [(y - x) / 60 for x, y in zip(a, b)]

def mallocs(path):
    """The calls to malloc that callgrind recorded, from every caller."""
    names, callee, total = {}, None, 0
    for line in open(path):
        match = re.match(r"^c?fn=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if match:
            if match.group(2):
                names[match.group(1)] = match.group(2)
            callee = names.get(match.group(1)) if line.startswith("cfn=") else None
        elif line.startswith("calls=") and callee and re.search(r"(^|[:.])malloc$", callee):
            total += int(line[6:].split()[0])
    return total

print(d[0], d[6], d[7] + d[8], (mallocs(sys.argv[4]) - mallocs(sys.argv[3])) / 60)
PY
}
read -r base_ir base_code base_data base_allocations < <(per_cycle none)
read -r phases_ir phases_code phases_data phases_allocations < <(per_cycle none-phases)
read -r route_ir route_code route_data route_allocations < <(per_cycle none-route)
printf "%-18s %13s %11s %11s %12s\n" cycle instructions code-lines data-lines allocations
for mode in openclose full handwritten minimal full-phases handwritten-phases minimal-phases full-route \
    handwritten-route minimal-route; do
    read -r ir code data allocations < <(per_cycle "$mode")
    if [[ $mode == *-phases ]]; then
        b_ir=$phases_ir b_code=$phases_code b_data=$phases_data b_allocations=$phases_allocations
    elif [[ $mode == *-route ]]; then
        b_ir=$route_ir b_code=$route_code b_data=$route_data b_allocations=$route_allocations
    else
        b_ir=$base_ir b_code=$base_code b_data=$base_data b_allocations=$base_allocations
    fi
    printf "%-18s %13.0f %11.0f %11.0f %12.1f\n" "$mode" "$(echo "$ir - $b_ir" | bc)" \
        "$(echo "$code - $b_code" | bc)" "$(echo "$data - $b_data" | bc)" \
        "$(echo "$allocations - $b_allocations" | bc)"
done

if [ -n "${FUNCTIONS:-}" ]; then
    for count in 10 70; do
        callgrind_annotate --show=ILmr,DLmr,DLmw,Ir --sort=ILmr --threshold=100 "$work/$FUNCTIONS.$count.out" \
            2>/dev/null | awk '/file:function/ { p = 1; next } p && NF > 4' >"$work/functions.$count"
    done
    python3 - "$work/functions.10" "$work/functions.70" <<'PY'
import re, sys
def load(path):
    rows = {}
    for line in open(path):
        parts = re.sub(r"\(\s*[0-9.]+%\)", "", line).split()
        numbers = []
        while parts and re.match(r"^[0-9,.]+$", parts[0]):
            field = parts.pop(0)
            numbers.append(0 if field == "." else int(field.replace(",", "")))
        if len(numbers) == 4:
            rows[re.sub(r"\s*\[.*\]$", "", " ".join(parts)).replace("???:", "")] = numbers
    return rows
a, b = load(sys.argv[1]), load(sys.argv[2])
print("\ncode lines, data lines, instructions per cycle, by function:")
rows = []
for name, values in b.items():
    d = [(y - x) / 60 for x, y in zip(a.get(name, [0, 0, 0, 0]), values)]
    if d[0] >= 0.5 and "runCycles" not in name:
        rows.append((d, name))
for d, name in sorted(rows, key=lambda r: -r[0][0]):
    print("%5.1f %5.1f %7.0f  %s" % (d[0], d[1] + d[2], d[3], name[:140]))
PY
fi
