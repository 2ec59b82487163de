#!/usr/bin/env bash
# Where the allocations a request makes through the request scope come from, beyond the hand-wired
# route's: each call site of malloc (the callers' frames, demangled) with its calls per request, scoped
# less hand-wired, over REQUESTS sequential requests per route on one keep-alive connection (as the load
# check's clients; CONNECTION_PER_REQUEST=1: a connection each, whose task then allocates the slabs of
# its async stack, more for the deeper scoped route, a few per request). heaptrack
# (Scripts/allocations-per-request.sh) counts them better but cannot name the callers here; this names
# them, with Scripts/malloc-sites.c loaded into the server (glibc, gcc).
#
#   Scripts/allocation-sites.sh          # release build, 200 requests per route
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."
source Scripts/server-started.sh

requests="${REQUESTS:-200}"
swift build -c release --product SignupServer >/dev/null
binary="$(swift build -c release --show-bin-path 2>/dev/null)/SignupServer"
work="$(mktemp -d)"
cc -O2 -shared -fPIC -o "$work/malloc-sites.so" Scripts/malloc-sites.c -ldl
ALLOCATION_SITES_DIR="$work" LD_PRELOAD="$work/malloc-sites.so" \
    "$binary" --port 0 --database "$work/sites.sqlite" >"$work/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
port="$(server_started "$work/server.log" "$server")"

for route in scoped direct; do
    # Warm: the first requests make what the server keeps (metadata, caches, pools).
    for _ in $(seq 1 30); do curl -sf "http://127.0.0.1:$port/load/$route/1" >/dev/null; done
    kill -USR1 "$server"
    if [ -n "${CONNECTION_PER_REQUEST:-}" ]; then
        for _ in $(seq 1 "$requests"); do curl -sf "http://127.0.0.1:$port/load/$route/1" >/dev/null; done
    else
        # One curl for them all: one keep-alive connection, as the load check's clients use.
        curl -sf $(for _ in $(seq 1 "$requests"); do echo "http://127.0.0.1:$port/load/$route/1"; done) >/dev/null
    fi
    kill -USR2 "$server"
    for _ in $(seq 1 50); do [ -s "$work/sites.$server" ] && break; sleep 0.1; done
    sleep 0.2
    mv "$work/sites.$server" "$work/$route.sites"
done

python3 - "$binary" "$requests" "$work/scoped.sites" "$work/direct.sites" <<'PY'
import collections, subprocess, sys

binary, requests = sys.argv[1], int(sys.argv[2])
allocators = ("swift_slowAlloc", "swift_allocObject", "swift_bufferAllocate")

def sites(path):
    """Calls per stack, the allocator's own frames left out, three frames deep."""
    counts = collections.Counter()
    for line in open(path):
        count, *frames = line.rstrip("\n").split(" | ")
        frames = [f for f in frames if not f.startswith(allocators)]
        counts[tuple(frames[:3])] += int(count)
    return counts

scoped, direct = sites(sys.argv[3]), sites(sys.argv[4])
print(f"allocations per request: scoped {sum(scoped.values()) / requests:.2f}, "
      f"hand-wired {sum(direct.values()) / requests:.2f}")
rows = [(k, (scoped[k] - direct[k]) / requests) for k in set(scoped) | set(direct)]
rows = sorted((r for r in rows if abs(r[1]) >= 0.2), key=lambda r: -r[1])
frames = sorted({f for k, _ in rows for f in k})
names = {}
# "@object@offset": a frame without an exported name, resolved here when it is in the server's binary.
offsets = [f for f in frames if f.startswith("@") and f.split("@")[1] == binary]
if offsets:
    lines = subprocess.run(["addr2line", "-f", "-e", binary] + ["0x" + f.split("@")[2] for f in offsets],
                           capture_output=True, text=True).stdout.split("\n")
    names.update({f: lines[2 * i] for i, f in enumerate(offsets)})
# Every name demangled: those dladdr found are mangled too.
symbols = [names.get(f, f) for f in frames]
demangled = subprocess.run(["swift", "demangle", "--simplified"], capture_output=True, text=True,
                           input="\n".join(symbols)).stdout.split("\n")
names = {f: demangled[i][:100] for i, f in enumerate(frames)}
print("per request, scoped less hand-wired, by the allocating frame and its callers:")
for frames, difference in rows:
    print(f"{difference:+6.2f}  " + "  <  ".join(names.get(f, f) for f in frames))
PY
