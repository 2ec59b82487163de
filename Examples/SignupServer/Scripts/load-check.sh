#!/usr/bin/env bash
# The load check: requests per second and p99 latency of the same request served three ways: through a
# request scope of the graph (GET /load/scoped/1: a scope opened, seeded, a scoped service made, the
# scope closed), hand-wired (GET /load/direct/1: the service made by hand), and hand-wired through a
# request scope written by hand (GET /load/handwritten/1: one object per request holding the seed, the
# service made on first use under a lock; what any request scope costs, the floor for the graph's). All
# read one row of SQLite. wrk drives concurrent keep-alive connections on loopback; the routes take
# turns, round by round (the order rotates), against one server process. Reported: each route's median,
# and the median of the rounds' own costs (1 - scoped/direct within a round, and the same for the
# hand-written scope), which a shared, noisy machine's drift affects least; beside it, the server's CPU
# time (user + system, from /proc) per request served, each route's and the rounds' differences.
#
#   Scripts/load-check.sh                        # release build, 12 rounds of 5 s per route
#   ROUNDS=1 DURATION=1s CONFIGURATION=debug Scripts/load-check.sh   # a smoke run (CI)
#   ROUTES="direct scoped" Scripts/load-check.sh  # some of the routes (direct, the baseline, first)
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."
source Scripts/server-started.sh

configuration="${CONFIGURATION:-release}"
rounds="${ROUNDS:-12}"
duration="${DURATION:-5s}"
connections="${CONNECTIONS:-32}"
threads="${THREADS:-1}"

if ! command -v wrk >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq wrk >/dev/null
fi
swift build -c "$configuration" --product SignupServer >/dev/null
binary="$(swift build -c "$configuration" --show-bin-path 2>/dev/null)/SignupServer"

# On two or more cores, the server gets the first and wrk the second: without it, the two fight over
# the same cores and the rounds' figures swing by a quarter either way.
server_cpu=()
client_cpu=()
if command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -ge 2 ] && [ -z "${NO_PINNING:-}" ]; then
    server_cpu=(taskset -c 0)
    client_cpu=(taskset -c 1)
fi

work="$(mktemp -d)"
"${server_cpu[@]}" "$binary" --port 0 --database "$work/load.sqlite" >"$work/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
port="$(server_started "$work/server.log" "$server")"

# The server's CPU time so far (user + system), in clock ticks; 0 where /proc is not there.
server_ticks() {
    if [ -r "/proc/$server/stat" ]; then
        # Fields 14 and 15 (utime, stime), counted after the command name, which may hold spaces.
        sed 's/^.*) //' "/proc/$server/stat" | awk '{ print $12 + $13 }'
    else
        echo 0
    fi
}
ticks_per_second="$(getconf CLK_TCK 2>/dev/null || echo 100)"

# One wrk run: prints "requests/s p99-ms server-CPU-µs-per-request".
measure() {
    local output rps p99 requests ticks_before ticks_after
    ticks_before="$(server_ticks)"
    output="$("${client_cpu[@]}" wrk -t "$threads" -c "$connections" -d "$duration" --latency "http://127.0.0.1:$port/load/$1/1")"
    ticks_after="$(server_ticks)"
    if grep -qE "Non-2xx|Socket errors" <<<"$output"; then
        echo "error: /load/$1/1 answered with errors:" >&2
        echo "$output" >&2
        exit 1
    fi
    rps="$(awk '/^Requests\/sec:/ {print $2}' <<<"$output")"
    p99="$(awk '$1 == "99%" {print $2}' <<<"$output")"
    if [ -z "$rps" ] || [ -z "$p99" ] || ! awk -v r="$rps" 'BEGIN { exit !(r > 0) }'; then
        echo "error: no figures from wrk for /load/$1/1:" >&2
        echo "$output" >&2
        exit 1
    fi
    # wrk prints latencies with a unit (us, ms, s): in milliseconds.
    p99="$(awk -v v="$p99" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /[^m]s$/) n *= 1000; printf "%.2f", n }')"
    # The server's CPU time per request served, in microseconds: a second view of the same cost, which
    # does not depend on the client keeping the server busy.
    requests="$(awk '/requests in/ { print $1 }' <<<"$output")"
    awk -v r="$rps" -v p="$p99" -v n="$requests" -v a="$ticks_before" -v b="$ticks_after" -v hz="$ticks_per_second" \
        'BEGIN { printf "%s %s %.1f\n", r, p, (n > 0 ? (b - a) * 1000000 / hz / n : 0) }'
}

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

measure direct >/dev/null  # warm-up
routes=(${ROUTES:-direct scoped handwritten})
for route in "${routes[@]}"; do
    for series in "" .cost .cpu-cost; do : >"$work/$route$series"; done
done
for round in $(seq 1 "$rounds"); do
    # The order rotates, so that no route always follows the same one.
    shift_by=$(((round - 1) % ${#routes[@]}))
    order=("${routes[@]:shift_by}" "${routes[@]:0:shift_by}")
    for route in "${order[@]}"; do
        result="$(measure "$route")"
        echo "$result" >>"$work/$route"
        printf 'round %s %-11s %10s requests/s   p99 %s ms   server CPU %s µs/request\n' "$round" "$route" $result
    done
    # This round's cost of each route against the hand-wired one: throughput lost (%), and CPU added.
    for route in "${routes[@]}"; do
        awk -v d="$(tail -1 "$work/direct" | cut -d' ' -f1)" -v s="$(tail -1 "$work/$route" | cut -d' ' -f1)" \
            'BEGIN { print (1 - s / d) * 100 }' >>"$work/$route.cost"
        awk -v d="$(tail -1 "$work/direct" | cut -d' ' -f3)" -v s="$(tail -1 "$work/$route" | cut -d' ' -f3)" \
            'BEGIN { print s - d }' >>"$work/$route.cpu-cost"
    done
done

# The median of a series and its range, with a unit: "6.0% (4.1% to 7.9%)".
spread() { # file unit
    printf "%.1f$2 (%.1f$2 to %.1f$2)" "$(median <"$1")" "$(sort -g "$1" | sed -n 1p)" "$(sort -g "$1" | tail -1)"
}
name() {
    case $1 in
    direct) echo "hand-wired" ;;
    scoped) echo "request scope" ;;
    handwritten) echo "hand-written scope" ;;
    *) echo "$1" ;;
    esac
}

echo
echo "median of $rounds rounds ($configuration, $connections connections, $duration each):"
for route in "${routes[@]}"; do
    printf '  %-19s %10.0f requests/s   p99 %6.2f ms   server CPU %6.1f µs/request\n' "$(name "$route")" \
        "$(cut -d' ' -f1 "$work/$route" | median)" "$(cut -d' ' -f2 "$work/$route" | median)" \
        "$(cut -d' ' -f3 "$work/$route" | median)"
done
echo "against the hand-wired route (medians of the rounds' own figures, and their range):"
for route in "${routes[@]}"; do
    [ "$route" = direct ] && continue
    printf '  %-19s costs %s of throughput, %s of server CPU per request\n' "$(name "$route")" \
        "$(spread "$work/$route.cost" %%)" "$(spread "$work/$route.cpu-cost" ' µs')"
done

kill -TERM "$server"
wait "$server"
trap 'rm -rf "$work"' EXIT
