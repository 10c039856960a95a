#!/bin/sh
# Measures latency at fixed request rates (open loop, corrected for
# coordinated omission; see bench/loadgen/rate.go): starts `bench/loadgen
# -serve` with one target at a time on 127.0.0.1:$PORT (a fresh process
# that stops by itself after 10 minutes at most) and drives it with
# `bench/loadgen -url ... -rate ...` at each rate of RATES in turn, C
# connections, D per rate. Prints a Markdown table per target.
#
#   bench/latency.sh                                   # sqlite, both operations
#   RATES=2000,4000 OPS=query TARGETS=memory,sqlite bench/latency.sh
set -eu
D=${D:-10s}
C=${C:-64}
RATES=${RATES:-1000,2000,3000,4000,5000}
TARGETS=${TARGETS:-sqlite}
OPS=${OPS:-create,query}
PORT=${PORT:-18080}

cd "$(dirname "$0")/.."
W=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$W"' EXIT
go build -o "$W/loadgen" ./bench/loadgen

for t in $(echo "$TARGETS" | tr ',' ' '); do
	rm -f "$W/target"
	"$W/loadgen" -serve 10m -port "$PORT" -targets "$t" >"$W/target" 2>"$W/loadgen.log" &
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
	echo "$name ($C connections, $D per rate):"
	echo
	"$W/loadgen" -url "$url" -token "$token" -rate "$RATES" -ops "$OPS" -c "$C" -d "$D"
	echo
	kill $pid
	wait $pid || true
	pid=
done
echo "$(go env GOVERSION), $(nproc) CPUs; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
