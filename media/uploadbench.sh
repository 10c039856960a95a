#!/usr/bin/env bash
# uploadbench.sh measures the example server's memory while it decodes
# several large image uploads at once, beside the latency of a message
# query served meanwhile.
#
# Usage: media/uploadbench.sh [-s SRC] [-n N] [-f "FLAGS"] IMAGE
#
# It builds examples/server from SRC (default: this checkout; give another
# checkout to compare versions), starts it on 127.0.0.1 with SQLite in a
# temporary directory and its default flags (plus FLAGS), creates a channel, then posts
# IMAGE as an image message N times at once (default 6) with curl while
# another curl queries the channel's messages in a loop. It prints the
# server's resident set before the uploads and at its peak (VmHWM), each
# upload's status and time, and the query latencies (median, 95th
# percentile, largest) before and during the uploads.
#
# Make a 7000x7000 16-bit RGBA PNG (about 400 KB) with
#
#	go run ./media/cmd/mediabench -gen deep16.png -format png16 -w 7000 -h 7000
#
# Needs: go, curl, python3 (to pick a free port).
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
n=6
flags=
while getopts "s:n:f:" opt; do
	case $opt in
	s) src=$(cd "$OPTARG" && pwd) ;;
	n) n=$OPTARG ;;
	f) flags=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
img=${1:?usage: uploadbench.sh [-s SRC] [-n N] [-f FLAGS] IMAGE}
img=$(cd "$(dirname "$img")" && pwd)/$(basename "$img")

work=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

(cd "$src" && go build -o "$work/server" ./examples/server)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$work/server" -store "sqlite:$work/chat.db" -addr "127.0.0.1:$port" -first-admin-token-file "$work/token" \
	-admin-rate 0 -log-level error $flags >"$work/server.log" 2>&1 &
pid=$!
base=http://127.0.0.1:$port
for _ in $(seq 100); do
	curl -sf "$base/livez" >/dev/null && [ -s "$work/token" ] && break
	sleep 0.1
done
token=$(cat "$work/token")
api=$base/api/v2
auth="Authorization: Bearer $token"
curl -sf -H "$auth" -H 'Content-Type: application/json' -d '{"channelId":"bench","type":"standard"}' "$api/channel" >/dev/null

query() {
	curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -H "$auth" -H 'Content-Type: application/json' \
		-d '{"channelId":"bench"}' "$api/messages"
}
# quantiles prints the median, 95th percentile and largest of the times
# (second column) of the successful (200) responses in a file, in
# milliseconds.
quantiles() {
	python3 - "$1" <<'EOF'
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
ok = sorted(float(t) * 1000 for c, t in rows if c == "200")
bad = len(rows) - len(ok)
if not ok:
    print("no successful queries (%d failed)" % bad)
else:
    q = lambda p: ok[min(len(ok) - 1, int(p * len(ok)))]
    print("%d queries: median %.1f ms, p95 %.1f ms, max %.1f ms%s" % (
        len(ok), q(0.5), q(0.95), ok[-1], ", %d not 200" % bad if bad else ""))
EOF
}

sleep 1
for _ in $(seq 50); do query; done >"$work/before.txt"
rss0=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")

touch "$work/querying"
(while [ -e "$work/querying" ]; do query; done >"$work/during.txt") &
qpid=$!
start=$(date +%s.%N)
uploads=()
for i in $(seq "$n"); do
	curl -s -o "$work/upload$i.json" -w "upload $i: %{http_code} in %{time_total} s\n" -H "$auth" \
		-F channelId=bench -F "file=@$img" "$api/messages/images" >"$work/upload$i.txt" &
	uploads+=($!)
done
wait "${uploads[@]}"
end=$(date +%s.%N)
rm "$work/querying"
wait "$qpid"
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")

echo "server: $src ($(cd "$src" && git rev-parse --short HEAD 2>/dev/null || echo '?'))"
echo "image: $(basename "$img"), $(stat -c %s "$img") bytes; $n uploads at once; flags: ${flags:-none}"
echo "load: $(uptime)"
echo "resident set before the uploads: $((rss0 / 1024)) MiB; peak (VmHWM): $((hwm / 1024)) MiB"
cat "$work"/upload*.txt
for i in $(seq "$n"); do
	head -c 160 "$work/upload$i.json" | tr -d "\n"
	echo
done | sort | uniq -c
printf 'uploads took %.1f s in all\n' "$(echo "$end - $start" | bc)"
echo "before the uploads: $(quantiles "$work/before.txt")"
echo "during the uploads: $(quantiles "$work/during.txt")"
