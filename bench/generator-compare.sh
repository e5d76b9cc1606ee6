#!/usr/bin/env bash
# generator-compare.sh: start one loopback no-op server (bench/noop) and
# measure four load generators against it in one run, interleaved and
# repeated: wrk, vegeta and idemcheck's runner (bench/runload: runner.Run,
# the code path of `idemcheck run`, closed model, full history kept, no
# faults), the runner twice: through its own HTTP/1.1 client ("runner",
# internal/h1, its default) and through net/http's Transport ("runner-net",
# runload -client net). Each gets the same POST with a JSON body and an
# Idempotency-Key header, CONNS connections, DURATION per round, ROUNDS rounds in rotating
# order. For each measurement it prints req/s and the generator's CPU per
# request (user+system time of its process, from the shell's times), then the
# medians and the runner's ratios to wrk, vegeta and itself on net/http.
#
# wrk comes from the distribution (apt-get, as root); vegeta v12.13.0 is
# installed with `go install` into a temporary GOBIN: neither is a
# dependency of idemcheck.
#
#   bench/generator-compare.sh                  # 3 rounds of 8s each
#   ROUNDS=5 DURATION=10 bench/generator-compare.sh
#
# The server shares the machine: with 2 cores a generator's req/s is bounded
# by the CPU it leaves the server, so CPU per request is the fairer figure.
# Run it when the machine is otherwise idle (see `uptime`).
set -euo pipefail

cd "$(dirname "$0")/.."
DURATION=${DURATION:-8}   # seconds per measurement
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-64}
ADDR=${ADDR:-127.0.0.1:18090}
export PATH="$PATH:/usr/local/go/bin"

. bench/noop-server.sh

echo "== building" >&2
if ! command -v wrk >/dev/null; then
	apt-get update -qq >&2 && apt-get install -y -qq wrk >&2
fi
GOBIN="$tmp/bin" go install github.com/tsenart/vegeta/v12@v12.13.0
go build -o "$tmp/bin/noop" ./bench/noop
go build -o "$tmp/bin/runload" ./bench/runload

start_noop "$tmp/bin/noop" "$ADDR"

body='{"amount":100,"currency":"usd","customer":"cus_1"}'
printf '%s' "$body" >"$tmp/body.json"
key=00000000-0000-4000-8000-000000000000
cat >"$tmp/post.lua" <<EOF
wrk.method = "POST"
wrk.body = '$body'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Idempotency-Key"] = "$key"
EOF
printf 'POST http://%s/charges\nIdempotency-Key: %s\nContent-Type: application/json\n@%s\n' "$ADDR" "$key" "$tmp/body.json" >"$tmp/targets"

# children_cpu: the user+system seconds of the children this (sub)shell has
# reaped so far, from the builtin times (its second line: "0m1.5s 0m0.3s").
children_cpu() {
	times >"$tmp/times" # not in a pipe: a pipe's subshell has no children
	awk 'NR == 2 {
		split($1, u, /[ms]/); split($2, s, /[ms]/)
		print "cpu", u[1] * 60 + u[2] + s[1] * 60 + s[2]}' "$tmp/times"
}

# measure NAME: runs run_NAME in a subshell, which prints "requests N",
# "req/s N" and "cpu SECONDS" (the generator's CPU, measured right after it
# exits), and prints "NAME req/s cpu_us_per_req".
measure() {
	local name=$1
	("run_$name") >"$tmp/out" 2>"$tmp/err" || { echo "$name failed:" >&2; cat "$tmp/err" >&2; return 1; }
	awk -v n="$name" '$1 == "requests" {q = $2} $1 == "req/s" {r = $2} $1 == "cpu" {c = $2}
		END { printf "%-10s %9.0f req/s %7.2f us CPU/request\n", n, r, c * 1e6 / q }' "$tmp/out"
}

run_wrk() {
	wrk -t2 -c"$CONNS" -d"${DURATION}s" -s "$tmp/post.lua" "http://$ADDR/charges" >"$tmp/wrk.out"
	children_cpu
	cat "$tmp/wrk.out" >&2
	awk '/requests in/ {print "requests", $1} /^Requests\/sec:/ {print "req/s", $2}' "$tmp/wrk.out"
}

run_vegeta() {
	"$tmp/bin/vegeta" attack -targets="$tmp/targets" -rate=0 -max-workers="$CONNS" -workers="$CONNS" \
		-duration="${DURATION}s" >"$tmp/vegeta.bin"
	children_cpu # the attack's, not the report's
	"$tmp/bin/vegeta" report -type=json <"$tmp/vegeta.bin" >"$tmp/vegeta.json"
	# requests, and the rate of everything sent over the attack's duration
	# (vegeta's "rate" would leave out the wait for the last answers).
	tr ',{}' '\n\n\n' <"$tmp/vegeta.json" | awk -F: '
		$1 == "\"requests\"" {n = $2}
		$1 == "\"throughput\"" {tp = $2}
		$1 == "\"rate\"" {r = $2}
		END {print "requests", n; print "req/s", (tp > 0 ? tp : r)}'
}

# runload CLIENT: the runner through net/http (net) or internal/h1 (h1).
runload() {
	# runload prints "attempts N (...)" and "req/s N".
	"$tmp/bin/runload" -client "$1" -target "http://$ADDR" -workers "$CONNS" -duration "${DURATION}s" >"$tmp/runner.out"
	children_cpu # the whole process: the load, the merge and sort of the history, its summary
	cat "$tmp/runner.out" >&2
	awk '$1 == "attempts" {print "requests", $2} $1 == "req/s" {print "req/s", $2}' "$tmp/runner.out"
}

run_runner() { runload h1; }

run_runner-net() { runload net; }

echo "== $ROUNDS rounds, ${DURATION}s each, $CONNS connections, POST with a JSON body; $(uptime)"
: >"$tmp/results"
order=(wrk vegeta runner runner-net)
for round in $(seq "$ROUNDS"); do
	for i in 0 1 2 3; do
		g=${order[$(((i + round - 1) % 4))]}
		line=$(measure "$g")
		echo "round $round  $line"
		echo "$line" >>"$tmp/results"
		sleep 1
	done
done

echo
echo "== medians"
# median: the median of the numbers on stdin, one per line.
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
for g in "${order[@]}"; do
	rps=$(awk -v g="$g" '$1 == g {print $2}' "$tmp/results" | median)
	cpu=$(awk -v g="$g" '$1 == g {print $4}' "$tmp/results" | median)
	printf '%-10s %9.0f req/s %7.2f us CPU/request\n' "$g" "$rps" "$cpu"
done | tee "$tmp/medians"
awk '{rps[$1] = $2; cpu[$1] = $4} END {
	ratio("runner", "wrk"); ratio("runner", "vegeta"); ratio("runner", "runner-net")
	ratio("runner-net", "wrk"); ratio("runner-net", "vegeta")
}
function ratio(a, b) {
	printf "%-17s %.2fx req/s, %.2fx CPU/request\n", a "/" b, rps[a] / rps[b], cpu[a] / cpu[b]
}' "$tmp/medians"
