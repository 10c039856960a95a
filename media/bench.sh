#!/usr/bin/env bash
# bench.sh compares media.Process with libvips' vipsthumbnail on a
# deterministic 12-megapixel (4000x3000) photo-like JPEG with EXIF
# orientation 6, making the three renditions (1500, 600 and 160 px on the
# longest side, auto-rotated, metadata stripped, JPEG quality 85).
#
# Needs: go, python3, and the Debian packages libvips-tools, hyperfine and
# time (apt-get install -y libvips-tools hyperfine time).
#
# Timing: ROUNDS (default 5) hyperfine invocations, each running both
# commands RUNS (default 10) times after a warm-up, so that the two
# alternate in blocks of RUNS runs over the whole measurement and a burst of
# load from elsewhere affects both; the median is taken over all runs. Memory: peak resident set
# size from /usr/bin/time -v, MEMRUNS (default 5) times each; for the vips
# chain that is the largest of its three processes.
set -euo pipefail

ROUNDS=${ROUNDS:-5}
RUNS=${RUNS:-10}
MEMRUNS=${MEMRUNS:-5}

for tool in go python3 vipsthumbnail hyperfine /usr/bin/time; do
	command -v "$tool" >/dev/null || {
		echo "bench.sh: $tool not found (apt-get install -y libvips-tools hyperfine time)" >&2
		exit 1
	}
done

root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/ours" "$work/vips"

(cd "$root" && go build -o "$work/mediabench" ./media/cmd/mediabench)
"$work/mediabench" -gen "$work/in.jpg"

ours="$work/mediabench -out $work/ours $work/in.jpg"
vips="vipsthumbnail $work/in.jpg -s 1500 -o '$work/vips/l.jpg[Q=85,strip]' && vipsthumbnail $work/in.jpg -s 600 -o '$work/vips/m.jpg[Q=85,strip]' && vipsthumbnail $work/in.jpg -s 160 -o '$work/vips/s.jpg[Q=85,strip]'"

echo "== machine"
echo "cpus: $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "go: $(go version | cut -d' ' -f3), $(vipsthumbnail --vips-version), $(hyperfine --version)"
echo "input: $(stat -c %s "$work/in.jpg") bytes, $(vipsheader "$work/in.jpg")"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "== commands"
echo "ours: $ours"
echo "vips: $vips"
echo

for r in $(seq "$ROUNDS"); do
	hyperfine --style basic --warmup 2 --runs "$RUNS" \
		--export-json "$work/round$r.json" \
		-n mediabench "$ours" -n vipsthumbnail-x3 "$vips" >"$work/round$r.txt"
done

echo "== outputs"
"$work/mediabench" -v "$work/in.jpg" | sed 1d
for f in l m s; do vipsheader "$work/vips/$f.jpg"; done
echo

for name in ours vips; do
	cmd=${!name}
	: >"$work/$name.rss"
	for i in $(seq "$MEMRUNS"); do
		/usr/bin/time -v sh -c "$cmd" 2>&1 >/dev/null |
			awk -F': ' '/Maximum resident set size/ {print $2}' >>"$work/$name.rss"
	done
done

python3 - "$work" "$ROUNDS" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
times, cpu = {}, {}
for r in range(1, rounds + 1):
    for res in json.load(open(f"{work}/round{r}.json"))["results"]:
        times.setdefault(res["command"], []).extend(res["times"])
        cpu.setdefault(res["command"], []).append(res["user"] + res["system"])
print("== wall time (all runs of all rounds); CPU = user+system, mean")
for name, t in times.items():
    print(f"{name:18s} runs {len(t):3d}  median {statistics.median(t)*1000:7.1f} ms  "
          f"min {min(t)*1000:7.1f} ms  max {max(t)*1000:7.1f} ms  "
          f"CPU {statistics.mean(cpu[name])*1000:7.1f} ms")
print()
print("== peak RSS (/usr/bin/time -v, KiB)")
for name, label in (("ours", "mediabench"), ("vips", "vipsthumbnail-x3")):
    kb = [int(x) for x in open(f"{work}/{name}.rss").read().split()]
    print(f"{label:18s} runs {len(kb):3d}  median {statistics.median(kb):7.0f}  max {max(kb):7d}")
PY
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
