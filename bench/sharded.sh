#!/usr/bin/env bash
# sharded.sh: one run made by one process, then the same run made by
# SHARDS load processes (prepare, SHARDS loads at once, judge), against one
# lab on loopback; prints each one's throughput and verdict, and checks
# that both judge alike. On a 2-core machine the shards gain nothing (the
# lab and the loads share the cores): the point is the exact merge.
#
#   bench/sharded.sh                       # 20000 ops, 4 shards
#   OPS=50000 SHARDS=8 CONCURRENCY=128 bench/sharded.sh
#
# Needs: go, python3 (a free port), curl. Everything listens on 127.0.0.1
# and is stopped on exit; files go to OUT (default ./bench-out/sharded).
set -euo pipefail

cd "$(dirname "$0")/.."
OPS=${OPS:-20000}
SHARDS=${SHARDS:-4}
CONCURRENCY=${CONCURRENCY:-64}
SEED=${SEED:-1}
OUT=${OUT:-bench-out/sharded}

tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/idemcheck" .
ic="$tmp/idemcheck"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
target="http://127.0.0.1:$port"
"$ic" lab --addr "127.0.0.1:$port" --processor-latency 0 >"$tmp/lab.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do curl -fsS "$target/healthz" >/dev/null 2>&1 && break; sleep 0.1; done

cat >"$tmp/charges.yaml" <<YAML
name: sharded-charges
description: Protected charges with lost acks and resets, for the sharded benchmark.
expect: pass
operation:
  method: POST
  path: /charges
  body: '{"amount":100,"currency":"usd","customer":"cus_{{.Seq}}"}'
  key:
    header: Idempotency-Key
load:
  ops: $OPS
  concurrency: $CONCURRENCY
retry:
  attempts: 5
  backoff: {initial: 1ms, max: 100ms}
faults:
  - kind: drop_ack
    rate: 0.1
  - kind: reset
    rate: 0.02
quiet: 100ms
oracles:
  - name: ledger
    effects:
      bulk:
        path: /charges/counts
        value: \$.counts
invariants:
  - check: exactly_once
    oracle: ledger
  - check: same_response
YAML

rm -rf "$OUT"
mkdir -p "$OUT/one" "$OUT/shards"
field() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r, list) else r; print(eval(sys.argv[2]))" "$1" "$2"; }

echo "== one process: $OPS ops, concurrency $CONCURRENCY"
set +e
/usr/bin/time -f '%e s wall, %U s user, %S s sys' "$ic" run "$tmp/charges.yaml" --target "$target" --seed "$SEED" --out "$OUT/one" -q >"$OUT/one/report.txt" 2>"$OUT/one/stderr.txt"
one=$?
set -e
tail -1 "$OUT/one/stderr.txt"

echo "== $SHARDS shards: $OPS ops, concurrency $CONCURRENCY in all"
"$ic" run "$tmp/charges.yaml" --phase prepare --shards "$SHARDS" --start-in 2s --target "$target" --seed "$SEED" --out "$OUT/shards" 2>"$OUT/shards/prepare.txt"
lp=()
for i in $(seq 0 $((SHARDS - 1))); do
	/usr/bin/time -f "shard $i: %e s wall, %U s user, %S s sys" "$ic" run --phase load --shard "$i/$SHARDS" --out "$OUT/shards" -q 2>"$OUT/shards/load-$i.txt" &
	lp+=($!)
done
for p in "${lp[@]}"; do wait "$p" || echo "a load process failed (exit $?): the judge will say which shard is missing" >&2; done
set +e
"$ic" run --phase judge --out "$OUT/shards" --wait 1m -q >"$OUT/shards/report.txt" 2>"$OUT/shards/judge.txt"
sharded=$?
set -e
for i in $(seq 0 $((SHARDS - 1))); do tail -1 "$OUT/shards/load-$i.txt"; done

r1="$OUT/one/report.json"
rn="$OUT/shards/report.json"
printf '\n%-12s %10s %12s %10s %10s %s\n' run ops "ops/s" "p50 ms" "p99 ms" result
for r in "one:$r1" "$SHARDS-shards:$rn"; do
	name=${r%%:*}
	f=${r#*:}
	printf '%-12s %10s %12.0f %10.2f %10.2f %s\n' "$name" "$(field "$f" 'r["load"]["ops"]')" "$(field "$f" 'r["load"]["ops_per_second"]')" \
		"$(field "$f" 'r["latency"]["op"]["p50_ms"]')" "$(field "$f" 'r["latency"]["op"]["p99_ms"]')" "$(field "$f" 'r["result"]')"
done
if [ "$one" != "$sharded" ] || [ "$(field "$r1" 'r["result"]')" != "$(field "$rn" 'r["result"]')" ]; then
	echo "the sharded run judged otherwise than the one-process run (exit $sharded vs $one)" >&2
	exit 1
fi
echo "both judged alike (exit $one)"
