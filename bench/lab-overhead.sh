#!/usr/bin/env bash
# lab-overhead.sh: what the lab's idempotency layer costs, measured with
# idemcheck itself. It builds idemcheck, starts a throwaway redis-server and
# Postgres in temporary directories on free loopback ports, starts four labs
# (no processor latency, reset allowed):
#
#   memory          memory store, memory ledger
#   redis           Redis store,  memory ledger
#   postgres        memory store, Postgres ledger
#   redis+postgres  Redis store,  Postgres ledger
#
# and runs bench/scenarios/charges-bench.yaml (POST /charges, protected) and
# charges-bench-naive.yaml (POST /naive/charges) against them, no faults, one
# attempt per op, POST /reset before every run:
#
#   (a) closed model, 64 workers, DURATION each: protected vs naive on memory
#       (throughput, p50, p99), ROUNDS_A rounds interleaved; the same,
#       SAT_DURATION each, on the other backends, to find where each saturates;
#   (b) open model at one fixed RATE for every backend (default: half the
#       slowest protected closed-model throughput), DURATION each, naive and
#       protected interleaved (the order alternates from backend to backend):
#       p50/p99 and the overhead in ms and %.
#
# Everything listens on 127.0.0.1 and is stopped on exit. About 3.5 minutes.
#
#   bench/lab-overhead.sh
#   DURATION=5s SAT_DURATION=3s bench/lab-overhead.sh
#   RATE=800 KEEP=./out bench/lab-overhead.sh      # fixed rate, keep the JSON reports
#   IDEMCHECK=/tmp/idemcheck bench/lab-overhead.sh  # a binary already built
#   PG_PARAMS=pool_max_conns=16 bench/lab-overhead.sh  # a bigger pgx pool (default max(4, CPUs))
#
# Needs: go, jq, python3, curl, redis-server, Postgres binaries (PG_BIN,
# default /usr/lib/postgresql/15/bin). As root, Postgres runs as PG_USER
# (default postgres) through runuser, since initdb refuses root.
set -euo pipefail

cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
SAT_DURATION=${SAT_DURATION:-5s}
WORKERS=${WORKERS:-64}
ROUNDS_A=${ROUNDS_A:-2} # closed-model rounds on memory (naive, protected, naive, protected)
RATE=${RATE:-}
RATE_SHARE=${RATE_SHARE:-0.5}
RUN_TIMEOUT=${RUN_TIMEOUT:-90}
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
PG_USER=${PG_USER:-postgres}
KEEP=${KEEP:-}
IDEMCHECK=${IDEMCHECK:-} # a built idemcheck binary to use instead of building one
PG_PARAMS=${PG_PARAMS:-} # extra Postgres URL parameters for the labs, e.g. pool_max_conns=16

for tool in go jq python3 curl redis-server redis-cli; do
	command -v "$tool" >/dev/null || { echo "lab-overhead: $tool not found" >&2; exit 2; }
done
[ -x "$PG_BIN/initdb" ] || { echo "lab-overhead: no initdb in PG_BIN=$PG_BIN" >&2; exit 2; }

tmp=$(mktemp -d /tmp/idemcheck-bench.XXXXXX)
pgdir=$(mktemp -d /tmp/idemcheck-bench-pg.XXXXXX)
asPG=()
if [ "$(id -u)" = 0 ]; then
	chown "$PG_USER:" "$pgdir"
	asPG=(runuser -u "$PG_USER" --)
fi

lab_pids=()
redis_pid=
pg_started=
cleanup() {
	set +e
	for pid in "${lab_pids[@]}"; do kill "$pid" 2>/dev/null; done
	for pid in "${lab_pids[@]}"; do wait "$pid" 2>/dev/null; done
	if [ -n "$redis_pid" ]; then kill "$redis_pid" 2>/dev/null; wait "$redis_pid" 2>/dev/null; fi
	if [ -n "$pg_started" ]; then "${asPG[@]}" "$PG_BIN/pg_ctl" -D "$pgdir/data" -m fast -w stop >/dev/null 2>&1; fi
	if [ -n "$KEEP" ]; then mkdir -p "$KEEP" && cp "$tmp"/*.json "$tmp"/results.tsv "$KEEP"/ 2>/dev/null; fi
	rm -rf "$tmp" "$pgdir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

log() { echo "$@" >&2; }

if [ -n "$IDEMCHECK" ]; then
	bin=$IDEMCHECK
	log "== using $bin"
else
	log "== building idemcheck"
	go build -o "$tmp/idemcheck" .
	bin=$tmp/idemcheck
fi

log "== starting redis-server and Postgres (temporary, loopback)"
rport=$(free_port)
redis-server --bind 127.0.0.1 --port "$rport" --save '' --appendonly no --dir "$tmp" \
	--protected-mode yes --loglevel warning >"$tmp/redis.log" 2>&1 &
redis_pid=$!
pgport=$(free_port)
"${asPG[@]}" "$PG_BIN/initdb" -D "$pgdir/data" -U postgres --auth=trust -E UTF8 >"$tmp/initdb.log" 2>&1 ||
	{ cat "$tmp/initdb.log" >&2; exit 1; }
"${asPG[@]}" "$PG_BIN/pg_ctl" -D "$pgdir/data" -l "$pgdir/postgres.log" -w \
	-o "-c listen_addresses=127.0.0.1 -p $pgport -k $pgdir -c max_connections=100" start >/dev/null ||
	{ cat "$pgdir/postgres.log" >&2; exit 1; }
pg_started=1
for db in lab_memstore lab_redisstore; do
	"$PG_BIN/createdb" -h 127.0.0.1 -p "$pgport" -U postgres "$db"
done
for _ in $(seq 50); do
	if redis-cli -h 127.0.0.1 -p "$rport" ping >/dev/null 2>&1; then break; fi
	sleep 0.1
done
redis-cli -h 127.0.0.1 -p "$rport" ping >/dev/null
pg_url() { echo "postgres://postgres@127.0.0.1:$pgport/$1?sslmode=disable${PG_PARAMS:+&$PG_PARAMS}"; }

# start_lab NAME STORE LEDGER: starts a lab on a free port; sets url_NAME.
declare -A url
start_lab() {
	local name=$1 store=$2 ledger=$3 logf="$tmp/lab-${1//+/-}.log"
	# --processor-latency 0 means the 20ms default (lab.Config); a negative
	# duration means no processor latency at all.
	"$bin" lab --addr 127.0.0.1:0 --allow-reset --processor-latency=-1ns \
		--store "$store" --ledger "$ledger" 2>"$logf" &
	lab_pids+=($!)
	local u=
	for _ in $(seq 100); do
		u=$(sed -n 's/^lab listening on \(http:[^ ]*\).*/\1/p' "$logf")
		if [ -n "$u" ] && curl -fsS -o /dev/null "$u/healthz" 2>/dev/null; then break; fi
		u=
		sleep 0.1
	done
	[ -n "$u" ] || { log "lab $name did not start:"; cat "$logf" >&2; exit 1; }
	url[$name]=$u
	log "   lab $name: $u (store $store, ledger $ledger)"
}

log "== starting the labs (no processor latency)"
start_lab memory memory memory
start_lab redis "redis://127.0.0.1:$rport/0" memory
start_lab postgres memory "$(pg_url lab_memstore)"
start_lab redis+postgres "redis://127.0.0.1:$rport/1" "$(pg_url lab_redisstore)"

scen=bench/scenarios
results=$tmp/results.tsv
: >"$results"
n=0

# measure PHASE BACKEND VARIANT ROUND FLAGS...: one idemcheck run after a
# reset; appends a line to results.tsv.
measure() {
	local phase=$1 backend=$2 variant=$3 round=$4
	shift 4
	local file=$scen/charges-bench.yaml
	[ "$variant" = naive ] && file=$scen/charges-bench-naive.yaml
	n=$((n + 1))
	local out
	out=$tmp/$(printf '%02d' "$n")-$phase-${backend//+/-}-$variant-$round.json
	curl -fsS -X POST -o /dev/null "${url[$backend]}/reset"
	local rc=0
	timeout "$RUN_TIMEOUT" "$bin" run "$file" --target "${url[$backend]}" --format json "$@" >"$out" 2>"$out.err" || rc=$?
	if ! jq -e .load >/dev/null 2>&1 <"$out"; then
		log "run $phase $backend $variant failed (exit $rc):"
		cat "$out.err" >&2
		exit 1
	fi
	jq -r --arg phase "$phase" --arg backend "$backend" --arg variant "$variant" --arg rc "$rc" --arg round "$round" \
		'[$phase, $backend, $variant, .load.ops, .load.acked, .load.error_rate, .load.ops_per_second,
		  .latency.op.p50_ms, .latency.op.p90_ms, .latency.op.p99_ms, .latency.op.p99_9_ms, .latency.op.max_ms,
		  .result, $rc, $round] | @tsv' <"$out" >>"$results"
	# The ledger's oracle answer holds every key: keep only the summary.
	jq 'del(.observations)' <"$out" >"$out.tmp" && mv "$out.tmp" "$out"
	tail -n 1 "$results" | awk -F'\t' '{printf "   %-6s %-15s %-9s #%s %8.0f ops/s  p50 %7.3f ms  p99 %7.3f ms  errors %s  %s\n", $1, $2, $3, $15, $7, $8, $10, $6, $13}' >&2
}

log "== (a) closed model, $WORKERS workers: memory $DURATION each ($ROUNDS_A rounds), the others $SAT_DURATION each"
for r in $(seq "$ROUNDS_A"); do
	measure closed memory naive "$r" --concurrency "$WORKERS" --duration "$DURATION"
	measure closed memory protected "$r" --concurrency "$WORKERS" --duration "$DURATION"
done
measure closed redis protected 1 --concurrency "$WORKERS" --duration "$SAT_DURATION"
measure closed redis naive 1 --concurrency "$WORKERS" --duration "$SAT_DURATION"
measure closed postgres naive 1 --concurrency "$WORKERS" --duration "$SAT_DURATION"
measure closed postgres protected 1 --concurrency "$WORKERS" --duration "$SAT_DURATION"
measure closed redis+postgres protected 1 --concurrency "$WORKERS" --duration "$SAT_DURATION"
measure closed redis+postgres naive 1 --concurrency "$WORKERS" --duration "$SAT_DURATION"

if [ -z "$RATE" ]; then
	RATE=$(awk -F'\t' -v share="$RATE_SHARE" '$1 == "closed" && $3 == "protected" { if (min == "" || $7 < min) min = $7 }
		END { r = int(min * share / 50) * 50; if (r < 50) r = 50; print r }' "$results")
fi
log "== (b) open model at $RATE ops/s, $DURATION each, naive and protected interleaved"
i=0
for backend in memory redis postgres redis+postgres; do
	if [ $((i % 2)) = 0 ]; then order=(naive protected); else order=(protected naive); fi
	for variant in "${order[@]}"; do
		measure open "$backend" "$variant" 1 --rate "$RATE" --duration "$DURATION"
	done
	i=$((i + 1))
done

python3 - "$results" "$RATE" "$WORKERS" "$DURATION" <<'EOF'
import sys

path, rate, workers, duration = sys.argv[1:5]
cols = ["phase", "backend", "variant", "ops", "acked", "error_rate", "ops_s",
        "p50", "p90", "p99", "p999", "max", "result", "rc", "round"]
runs = {}
rounds = {}
for line in open(path):
    r = dict(zip(cols, line.rstrip("\n").split("\t")))
    for k in cols[3:12]:
        r[k] = float(r[k])
    runs[(r["phase"], r["backend"], r["variant"], r["round"])] = r
    rounds.setdefault((r["phase"], r["backend"]), [])
    if r["round"] not in rounds[(r["phase"], r["backend"])]:
        rounds[(r["phase"], r["backend"])].append(r["round"])

backends = ["memory", "redis", "postgres", "redis+postgres"]

def pct(new, old):
    return f"{(new - old) / old * 100:+.0f}%" if old else "n/a"

def ms(new, old):
    return f"{new - old:+.2f}"

def note(n, p):
    bad = [f"{v} {r['result']}, errors {r['error_rate']:g}" for v, r in (("naive", n), ("protected", p))
           if r["result"] != "met" or r["error_rate"] > 0]
    return "; ".join(bad)

print()
print(f"(a) closed model, {workers} workers, no faults, no processor latency "
      f"(memory: {duration}; others: shorter saturation runs)")
print()
print("| backend | naive ops/s | protected ops/s | Δ throughput | naive p50 | protected p50 | naive p99 | protected p99 |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
notes = []
for b in backends:
    for rd in rounds.get(("closed", b), []):
        n, p = runs.get(("closed", b, "naive", rd)), runs.get(("closed", b, "protected", rd))
        if not n or not p:
            continue
        if note(n, p):
            notes.append(f"{b} #{rd}: {note(n, p)}")
        label = b if len(rounds[("closed", b)]) == 1 else f"{b} (round {rd})"
        print(f"| {label} | {n['ops_s']:.0f} | {p['ops_s']:.0f} | {pct(p['ops_s'], n['ops_s'])} | "
              f"{n['p50']:.2f} ms | {p['p50']:.2f} ms | {n['p99']:.2f} ms | {p['p99']:.2f} ms |")
for s in notes:
    print(f"\nnote: {s}")

print()
print(f"(b) open model at {rate} ops/s, {duration} per run, naive and protected interleaved; "
      f"latency per op from its intended start. ADR claim: +30–50%.")
print()
print("| backend | achieved ops/s (naive / protected) | naive p50 | protected p50 | Δp50 | naive p99 | protected p99 | Δp99 |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for b in backends:
    n, p = runs.get(("open", b, "naive", "1")), runs.get(("open", b, "protected", "1"))
    if not n or not p:
        continue
    print(f"| {b} | {n['ops_s']:.0f} / {p['ops_s']:.0f} | {n['p50']:.3f} ms | {p['p50']:.3f} ms | "
          f"{ms(p['p50'], n['p50'])} ms ({pct(p['p50'], n['p50'])}) | {n['p99']:.3f} ms | {p['p99']:.3f} ms | "
          f"{ms(p['p99'], n['p99'])} ms ({pct(p['p99'], n['p99'])}) |")
for b in backends:
    if ("open", b, "naive", "1") in runs:
        s = note(runs[("open", b, "naive", "1")], runs[("open", b, "protected", "1")])
        if s:
            print(f"\nnote: {b}: {s}")
print()
print("| backend | naive p90 | protected p90 | Δp90 | naive p99.9 | protected p99.9 | Δp99.9 |")
print("|---|---:|---:|---:|---:|---:|---:|")
for b in backends:
    n, p = runs.get(("open", b, "naive", "1")), runs.get(("open", b, "protected", "1"))
    if not n or not p:
        continue
    print(f"| {b} | {n['p90']:.3f} ms | {p['p90']:.3f} ms | {ms(p['p90'], n['p90'])} ms ({pct(p['p90'], n['p90'])}) | "
          f"{n['p999']:.3f} ms | {p['p999']:.3f} ms | {ms(p['p999'], n['p999'])} ms ({pct(p['p999'], n['p999'])}) |")
EOF
