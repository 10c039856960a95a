#!/bin/sh
# Measures the admin HTTP API with wrk: builds bench/loadgen, starts it in
# serve mode with one target at a time on 127.0.0.1:$PORT (ceiling, memory,
# sqlite; each in a fresh process, which stops by itself after 10 minutes at
# most), drives it with wrk (one thread, so the client takes one core at
# most) and prints a Markdown table. Needs wrk (apt-get install -y wrk).
#
#   bench/http.sh                      # D=10s C=64 ROUNDS=1
#   D=5s C=16 TARGETS=sqlite bench/http.sh
#   TARGET_ENV=GOGC=100 TARGETS=sqlite bench/http.sh   # environment of the server only
#
# The sqlite target runs with GOGC=400, as examples/server sets it for
# SQLite (loadgen -gc-percent); GOGC in TARGET_ENV overrides it.
#
# Besides wrk's rate and latency percentiles, each row gives the p50 and
# p99 of the time the server's handler took (from the target's
# /debug/handler-time: the rest of wrk's latency was spent waiting to be
# read and scheduled, or in wrk itself), the CPU time the server process
# used during the measured run (user+system, from /proc), that time divided
# by the requests, and wrk's own CPU time: on a machine shared with other
# work the CPU per request is steadier than the rate. Needs curl.
#
# ROUNDS repeats the whole sequence (targets in turn, each with every
# operation), so the ceiling and the real servers alternate.
set -eu
D=${D:-10s}
C=${C:-64}
ROUNDS=${ROUNDS:-1}
TARGETS=${TARGETS:-ceiling,memory,sqlite}
OPS=${OPS:-create query}
PORT=${PORT:-18080}

cd "$(dirname "$0")/.."
. bench/target.sh # builds loadgen into $W, defines start and stop

# cpu PID: the user+system CPU time of the process, in clock ticks.
cpu() {
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

echo "| server | operation | requests | non-200 | requests/s | p50 | p99 | max | handler p50 | handler p99 | server CPU | server CPU per request | wrk CPU |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
r=0
while [ $r -lt "$ROUNDS" ]; do
	r=$((r + 1))
	for t in $(echo "$TARGETS" | tr ',' ' '); do
		start "$t"
		for op in $OPS; do
			# 1 s of warm-up, then the measured run.
			TOKEN=$token OP=$op wrk -t1 -c"$C" -d1s -s bench/api.lua "$url" >/dev/null
			curl -fsS "${url%/api/v2}/debug/handler-time" >/dev/null
			c0=$(cpu $pid)
			TOKEN=$token OP=$op /usr/bin/time -f "wrkcpu %U %S" -o "$W/wrktime" \
				wrk -t1 -c"$C" -d"$D" --latency -s bench/api.lua "$url" >"$W/out"
			c1=$(cpu $pid)
			curl -fsS "${url%/api/v2}/debug/handler-time" >>"$W/out"
			cat "$W/wrktime" >>"$W/out"
			echo "servercpu $c0 $c1" >>"$W/out"
			awk -v name="$name" -v op="$op" -v tck="$(getconf CLK_TCK)" '
				/requests in/ { reqs = $1 }
				/Non-2xx/ { bad = $NF }
				/Socket errors/ { bad = bad " (socket: " $0 ")" }
				/Requests\/sec/ { rate = $2 }
				/^ +50%/ { p50 = $2 }
				/^ +99%/ { p99 = $2 }
				/^ +Latency +[0-9]/ { max = $4 }
				/^wrkcpu/ { wrk = $2 + $3 }
				/^servercpu/ { srv = ($3 - $2) / tck }
				/^requests=/ { split($2, a, "="); hp50 = a[2]; split($4, a, "="); hp99 = a[2] }
				END {
					o = (op == "create") ? "create-message" : "query-messages"
					printf "| %s | %s | %s | %s | %.0f | %s | %s | %s | %s | %s | %.1f s | %.0f µs | %.1f s |\n", name, o, reqs, bad == "" ? 0 : bad, rate, p50, p99, max, hp50, hp99, srv, 1e6 * srv / reqs, wrk
				}' "$W/out"
		done
		stop
	done
done
echo
echo "wrk -t1 -c$C -d$D; $(go env GOVERSION), $(nproc) CPUs; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
