#!/usr/bin/env bash
# idempotency-cost.sh: regenerates the figures of bench/RESULTS.md with
# idemcheck's own bench commands. It builds idemcheck, starts a throwaway
# redis-server and Postgres on free loopback ports, and runs:
#
#   1. bench store on Redis and Postgres: each dedup primitive at
#      concurrency CONCURRENCY, bytes per record (VALUE_SIZE-byte body), the
#      ADR's capacity plan (10K RPS × 24 h);
#   2. bench store on Redis through `proxy tcp --latency 1ms`, concurrency 1:
#      the roundtrip must come out about 1 ms above the direct one;
#   3. bench overhead on the lab (Redis store, memory ledger; then Redis
#      store and Postgres ledger), protected POST /charges (A) against
#      POST /naive/charges (B), --rate auto: the highest rate each arm
#      sustains, then the A/B at half the lower one with a 95% CI per
#      percentile.
#
# Each step's output is kept in OUT (default ./bench-out): store.json,
# store.txt, store-1ms.json, overhead-*.md with the rate search in
# overhead-*.log, hgrm-*/a.hgrm and b.hgrm. Everything
# listens on 127.0.0.1 and is stopped on exit.
#
#   bench/idempotency-cost.sh
#   DURATION=2s OVERHEAD_DURATION=10s bench/idempotency-cost.sh
#
# Needs: go, python3 (a free port), redis-server, redis-cli, curl, Postgres
# binaries (PG_BIN, default /usr/lib/postgresql/15/bin). As root, Postgres
# runs as PG_USER (default postgres) through runuser.
set -euo pipefail

cd "$(dirname "$0")/.."
OUT=${OUT:-bench-out}
DURATION=${DURATION:-5s}                    # bench store: per primitive and concurrency
CONCURRENCY=${CONCURRENCY:-1,8,64}
VALUE_SIZE=${VALUE_SIZE:-256}
OVERHEAD_DURATION=${OVERHEAD_DURATION:-20s} # bench overhead: measured time per arm
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
PG_USER=${PG_USER:-postgres}

for tool in go python3 curl redis-server redis-cli; do
	command -v "$tool" >/dev/null || { echo "idempotency-cost: $tool not found" >&2; exit 2; }
done
[ -x "$PG_BIN/initdb" ] || { echo "idempotency-cost: no initdb in PG_BIN=$PG_BIN" >&2; exit 2; }

mkdir -p "$OUT"
tmp=$(mktemp -d /tmp/idemcheck-cost.XXXXXX)
pgdir=$(mktemp -d /tmp/idemcheck-cost-pg.XXXXXX)
asPG=()
if [ "$(id -u)" = 0 ]; then
	chown "$PG_USER:" "$pgdir"
	asPG=(runuser -u "$PG_USER" --)
fi
pids=()
pg_started=
cleanup() {
	set +e
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
	if [ -n "$pg_started" ]; then "${asPG[@]}" "$PG_BIN/pg_ctl" -D "$pgdir/data" -m fast -w stop >/dev/null 2>&1; fi
	rm -rf "$tmp" "$pgdir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
log() { echo "$@" >&2; }

log "== building idemcheck"
go build -o "$tmp/idemcheck" .
bin=$tmp/idemcheck

log "== starting redis-server and Postgres (temporary, loopback)"
rport=$(free_port)
redis-server --bind 127.0.0.1 --port "$rport" --save '' --appendonly no --dir "$tmp" \
	--protected-mode yes --loglevel warning >"$tmp/redis.log" 2>&1 &
pids+=($!)
pgport=$(free_port)
"${asPG[@]}" "$PG_BIN/initdb" -D "$pgdir/data" -U postgres --auth=trust -E UTF8 >"$tmp/initdb.log" 2>&1 ||
	{ cat "$tmp/initdb.log" >&2; exit 1; }
"${asPG[@]}" "$PG_BIN/pg_ctl" -D "$pgdir/data" -l "$pgdir/postgres.log" -w \
	-o "-c listen_addresses=127.0.0.1 -p $pgport -k $pgdir -c max_connections=200" start >/dev/null ||
	{ cat "$pgdir/postgres.log" >&2; exit 1; }
pg_started=1
for _ in $(seq 50); do
	if redis-cli -h 127.0.0.1 -p "$rport" ping >/dev/null 2>&1; then break; fi
	sleep 0.1
done
redis="redis://127.0.0.1:$rport/0"
pg="postgres://postgres@127.0.0.1:$pgport/postgres?sslmode=disable"

log "== 1. bench store, Redis and Postgres, concurrency $CONCURRENCY, $DURATION each"
"$bin" bench store --redis "$redis" --postgres "$pg" --concurrency "$CONCURRENCY" \
	--duration "$DURATION" --value-size "$VALUE_SIZE" --format json >"$OUT/store.json"
"$bin" bench store --redis "$redis" --concurrency 1 --duration "$DURATION" \
	--value-size "$VALUE_SIZE" >"$OUT/store.txt"

log "== 2. bench store through proxy tcp --latency 1ms"
pport=$(free_port)
"$bin" proxy tcp --listen "127.0.0.1:$pport" --upstream "127.0.0.1:$rport" --latency 1ms 2>"$tmp/proxy.log" &
pids+=($!)
sleep 0.5
"$bin" bench store --redis "redis://127.0.0.1:$pport/0" --concurrency 1 --duration "$DURATION" \
	--value-size "$VALUE_SIZE" --format json >"$OUT/store-1ms.json"

# start_lab NAME STORE LEDGER: a lab on a free port, no processor latency.
declare -A url
start_lab() {
	local name=$1 logf="$tmp/lab-$1.log"
	"$bin" lab --addr 127.0.0.1:0 --processor-latency=-1ns --store "$2" --ledger "$3" 2>"$logf" &
	pids+=($!)
	local u=
	for _ in $(seq 100); do
		u=$(sed -n 's/^lab listening on \(http:[^ ]*\).*/\1/p' "$logf")
		if [ -n "$u" ] && curl -fsS -o /dev/null "$u/healthz" 2>/dev/null; then break; fi
		u=
		sleep 0.1
	done
	[ -n "$u" ] || { log "lab $name did not start:"; cat "$logf" >&2; exit 1; }
	url[$name]=$u
}
"$PG_BIN/createdb" -h 127.0.0.1 -p "$pgport" -U postgres lab
start_lab redis "$redis" memory
start_lab redis-postgres "$redis" "postgres://postgres@127.0.0.1:$pgport/lab?sslmode=disable"

for name in redis redis-postgres; do
	log "== 3. bench overhead on the lab ($name), --rate auto, $OVERHEAD_DURATION per arm"
	"$bin" bench overhead POST "${url[$name]}/charges" \
		-d '{"amount":100,"currency":"usd","customer":"cus_{{.Seq}}"}' -H 'Authorization: Bearer alice' \
		--baseline-path /naive/charges --rate auto --duration "$OVERHEAD_DURATION" \
		--format markdown --out "$OUT/hgrm-$name" >"$OUT/overhead-$name.md" 2>"$OUT/overhead-$name.log" ||
		log "   exit $? (see $OUT/overhead-$name.log)"
done
log "== done: $OUT"
