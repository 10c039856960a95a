# Sourced by bench/http.sh and bench/latency.sh (POSIX sh) from the
# repository's root, with PORT set: builds bench/loadgen into a temporary
# directory W (removed on exit, with the target still running killed).
W=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$W"' EXIT
go build -o "$W/loadgen" ./bench/loadgen

#
# start TARGET: runs `loadgen -serve` with that target alone (a fresh
# process, so no other target's heap is in it; it stops by itself after
# 10 minutes at most) and sets pid, name, url and token.
start() {
	rm -f "$W/target"
	# TARGET_ENV: variables for the target's process only, e.g. GOGC=400.
	env ${TARGET_ENV:-} "$W/loadgen" -serve 10m -port "$PORT" -targets "$1" >"$W/target" 2>"$W/loadgen.log" &
	pid=$!
	i=0
	while [ ! -s "$W/target" ]; do
		i=$((i + 1))
		if [ $i -gt 600 ] || ! kill -0 $pid 2>/dev/null; then
			cat "$W/loadgen.log" >&2
			exit 1
		fi
		sleep 0.1
	done
	read -r name url token <"$W/target"
}

# stop: ends the target that start began.
stop() {
	kill $pid
	wait $pid || true
	pid=
}
