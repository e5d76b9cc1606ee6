#!/usr/bin/env bash
# vegeta-compare.sh: start one loopback no-op server and measure, one after
# the other in the same run, vegeta and idemcheck's runner against it: 64
# workers for DURATION each, no faults. vegeta is installed into a temporary
# GOBIN (it is not a dependency of idemcheck).
#
#   bench/vegeta-compare.sh            # 10s each
#   DURATION=5s bench/vegeta-compare.sh
set -euo pipefail

cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
WORKERS=${WORKERS:-64}
ADDR=${ADDR:-127.0.0.1:18089}

tmp=$(mktemp -d)
server_pid=
cleanup() {
	if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

echo "== building"
GOBIN="$tmp/bin" go install github.com/tsenart/vegeta/v12@latest
go build -o "$tmp/bin/noop" ./bench/noop
go build -o "$tmp/bin/runload" ./bench/runload

"$tmp/bin/noop" -addr "$ADDR" &
server_pid=$!
for _ in $(seq 50); do
	if curl -fsS -o /dev/null "http://$ADDR/" 2>/dev/null; then break; fi
	sleep 0.1
done

body="$tmp/body.json"
printf '{"amount":100,"currency":"usd","customer":"cus_1"}' >"$body"

echo
echo "== vegeta: attack -rate=0 -max-workers=$WORKERS -workers=$WORKERS -duration=$DURATION | report"
printf 'POST http://%s/charges\nIdempotency-Key: 00000000-0000-4000-8000-000000000000\nContent-Type: application/json\n@%s\n' "$ADDR" "$body" |
	"$tmp/bin/vegeta" attack -rate=0 -max-workers="$WORKERS" -workers="$WORKERS" -duration="$DURATION" |
	"$tmp/bin/vegeta" report

echo
echo "== idemcheck runner: closed model, $WORKERS workers, $DURATION, full history"
"$tmp/bin/runload" -target "http://$ADDR" -workers "$WORKERS" -duration "$DURATION"
