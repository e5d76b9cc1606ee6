# noop-server.sh, sourced by the bench scripts: a temporary directory $tmp
# removed on exit, and start_noop BIN ADDR, which starts the no-op server
# built at BIN on ADDR, waits until it answers, and stops it on exit.
tmp=$(mktemp -d)
server_pid=
cleanup() {
	if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

start_noop() {
	"$1" -addr "$2" &
	server_pid=$!
	for _ in $(seq 50); do
		if curl -fsS -o /dev/null "http://$2/" 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	echo "the no-op server did not answer on $2" >&2
	return 1
}
