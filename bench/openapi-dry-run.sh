#!/usr/bin/env bash
# openapi-dry-run.sh: the time and peak memory (max RSS) of
# `idemcheck audit --openapi SPEC --dry-run` on a document of N mutating
# operations (the one BenchmarkPlan300 plans: shared schemas nested five
# deep, a key header and a path parameter each). Nothing is sent.
#
#   bench/openapi-dry-run.sh            # 300 and 1200 operations (a multiple of 3)
#   OPS="300" RUNS=5 bench/openapi-dry-run.sh
#
# The issue's bar: 300 operations parsed and planned in under 2 s and 200 MB.
set -euo pipefail

cd "$(dirname "$0")/.."
OPS=${OPS:-300 1200}
RUNS=${RUNS:-3}
export PATH="$PATH:/usr/local/go/bin"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ ! -x /usr/bin/time ]; then
	apt-get update -qq >&2 && apt-get install -y -qq time >&2
fi
go build -o "$tmp/idemcheck" .
printf '%-6s %-6s %10s %12s\n' ops run seconds max_rss_MB
for n in $OPS; do
	go test ./openapi -run '^TestBigSpecPlans$' -count=1 -args -write-spec "$tmp/spec-$n.yaml" -spec-ops "$n" >/dev/null
	for r in $(seq "$RUNS"); do
		/usr/bin/time -f '%e %M' -o "$tmp/time" "$tmp/idemcheck" audit --openapi "$tmp/spec-$n.yaml" \
			--target http://127.0.0.1:9 --dry-run >"$tmp/plan.txt"
		read -r secs kb <"$tmp/time"
		grep -q "dry run: nothing sent. $((n / 3 * 3)) operations" "$tmp/plan.txt" || { echo "planned fewer than $n operations" >&2; tail -3 "$tmp/plan.txt" >&2; exit 1; }
		printf '%-6s %-6s %10s %12d\n' "$n" "$r" "$secs" $((kb / 1024))
	done
done
