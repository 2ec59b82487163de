#!/usr/bin/env bash
# The allocations one request makes in the server, through a request scope of the graph
# (GET /load/scoped/1) and hand-wired (GET /load/direct/1), the load check's two routes: heaptrack counts
# every call to an allocation function of the server process. Each route is served twice, for a short
# and a longer run, and the difference of the counts over the difference of the requests is the figure:
# startup's allocations cancel out. Unlike the load check's throughput, it does not move with the
# machine's load, and in this server allocations are most of what a request scope costs.
#
#   Scripts/allocations-per-request.sh
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."
source Scripts/server-started.sh

for tool in heaptrack wrk; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        apt-get update -qq && apt-get install -y -qq "$tool" >/dev/null
    fi
done
work="$(mktemp -d)"
swift build -c release --product SignupServer >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
binary="$(swift build -c release --show-bin-path 2>/dev/null)/SignupServer"
trap 'pkill -INT -f "^$binary --port 0 --database $work" 2>/dev/null || true; rm -rf "$work"' EXIT

# One run: the server under heaptrack, `route` served for `seconds`; prints "requests allocations".
run() {
    local route=$1 seconds=$2 run_dir port requests pid
    run_dir="$(mktemp -d "$work/run.XXXX")"
    heaptrack -o "$run_dir/heap" "$binary" --port 0 --database "$run_dir/load.sqlite" >"$run_dir/server.log" 2>&1 &
    local tracer=$!
    port="$(server_started "$run_dir/server.log" "$tracer")"
    requests="$(wrk -t 1 -c 8 -d "${seconds}s" "http://127.0.0.1:$port/load/$route/1" | awk '/requests in/ { print $1 }')"
    # SIGINT: the server shuts down gracefully, and heaptrack writes its data.
    pid="$(pgrep -f "^$binary --port 0 --database $run_dir")"
    kill -INT "$pid"
    wait "$tracer" || true
    echo "$requests $(heaptrack_print -f "$run_dir"/heap*.zst 2>/dev/null | sed -n 's/^calls to allocation functions: \([0-9]*\).*/\1/p')"
}

printf "%-12s %24s\n" route "allocations per request"
for route in direct scoped; do
    read -r short_requests short_allocations < <(run "$route" 1)
    read -r long_requests long_allocations < <(run "$route" 3)
    printf "%-12s %24.1f\n" "$route" \
        "$(echo "($long_allocations - $short_allocations) / ($long_requests - $short_requests)" | bc -l)"
done
