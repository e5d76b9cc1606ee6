#!/usr/bin/env bash
# spill-rss.sh: the peak memory (max RSS) of `idemcheck run` and of
# `idemcheck check` as a run grows, with the history spilled to disk (the
# default, --spill-after 1000000) and kept in memory (--spill-after 0),
# against one loopback no-op server (bench/noop). The scenario has retries,
# seeded faults and the same_response invariant, so each op is judged.
#
#   bench/spill-rss.sh                       # 1M, 3M and 10M ops spilled; 1M and 3M in memory
#   OPS="200000 1000000" MEM_OPS= bench/spill-rss.sh
#
# A spilled run's memory should not grow with its ops; one in memory grows
# by about 250 bytes per op. Disk: about 250 bytes per attempt, twice over
# while a run is judged (the spill, and its parts in $TMPDIR), and the saved
# history.jsonl.
set -euo pipefail

cd "$(dirname "$0")/.."
OPS=${OPS:-1000000 3000000 10000000}
MEM_OPS=${MEM_OPS-1000000 3000000}
ADDR=${ADDR:-127.0.0.1:18091}
export PATH="$PATH:/usr/local/go/bin"

. bench/noop-server.sh
if [ ! -x /usr/bin/time ]; then
	apt-get update -qq >&2 && apt-get install -y -qq time >&2
fi

go build -o "$tmp/idemcheck" .
go build -o "$tmp/noop" ./bench/noop
start_noop "$tmp/noop" "$ADDR"

cat >"$tmp/noop.yaml" <<EOF2
name: noop
description: every op answered 200 by a no-op server
expect: pass
target: http://$ADDR
operation:
  method: POST
  path: /charges
  key: {header: Idempotency-Key}
  body: '{"amount":100,"currency":"usd"}'
load: {ops: 1000, concurrency: 64}
retry: {attempts: 3, on: [fail, info, 5xx], backoff: {initial: 1ms, max: 5ms}}
faults:
  - {kind: reset, rate: 0.01}
invariants:
  - {check: same_response}
EOF2

mib() { awk '{printf "%.0f", $1/1024}' <<<"$1"; }
printf '%-10s %-8s %10s %12s %10s %12s %10s\n' ops history run_MiB run_s check_MiB check_s file_MiB
measure() {
	local ops=$1 spill=$2 label=$3 out="$tmp/out-$1-$2"
	rm -rf "$out"
	local s0=$SECONDS
	/usr/bin/time -f %M -o "$tmp/rss" "$tmp/idemcheck" run "$tmp/noop.yaml" --ops "$ops" --spill-after "$spill" \
		-q --out "$out" --format json >/dev/null 2>&1 || true
	local run_s=$((SECONDS - s0)) run_rss
	run_rss=$(mib "$(tail -1 "$tmp/rss")")
	s0=$SECONDS
	/usr/bin/time -f %M -o "$tmp/rss" "$tmp/idemcheck" check "$out" --format json >/dev/null 2>&1 || true
	local check_s=$((SECONDS - s0)) check_rss size
	check_rss=$(mib "$(tail -1 "$tmp/rss")")
	size=$(du -m "$out/history.jsonl" | cut -f1)
	printf '%-10s %-8s %10s %12s %10s %12s %10s\n' "$ops" "$label" "$run_rss" "$run_s" "$check_rss" "$check_s" "$size"
	rm -rf "$out"
}
for n in $OPS; do measure "$n" 1000000 spilled; done
for n in $MEM_OPS; do measure "$n" 0 memory; done
