# Sourced by the scripts that load the server: `server_started LOG PID` waits until the server whose
# output goes to LOG (run as process PID) listens, signs one user up (the row the load routes read) and
# prints the port; it fails with the server's log if the server stops or does not listen in a minute.
server_started() {
    local log=$1 pid=$2 port=""
    for _ in $(seq 1 600); do
        port="$(sed -n 's/.*\] listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" | sed -n 1p)"
        [ -n "$port" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    [ -n "$port" ] || { cat "$log" >&2; echo "error: the server did not start" >&2; return 1; }
    curl -sf -X POST "http://127.0.0.1:$port/signups" -H 'Content-Type: application/json' \
        -d '{"email":"load@example.org","name":"Load"}' >/dev/null
    echo "$port"
}
