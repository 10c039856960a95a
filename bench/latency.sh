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
. bench/target.sh # builds loadgen into $W, defines start and stop

for t in $(echo "$TARGETS" | tr ',' ' '); do
	start "$t"
	echo "$name ($C connections, $D per rate):"
	echo
	"$W/loadgen" -url "$url" -token "$token" -rate "$RATES" -ops "$OPS" -c "$C" -d "$D"
	echo
	stop
done
echo "$(go env GOVERSION), $(nproc) CPUs; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
