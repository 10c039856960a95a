#!/usr/bin/env bash
# Two chat server processes, A and B, on one Postgres database: what a
# deployment behind a load balancer looks like, on one machine.
#
# The script builds the server once, makes a fresh schema, starts A and B on
# it, creates an admin (admin create) and two users' tokens, connects bob's
# event stream (Server-Sent Events) to B, posts a message as alice through
# A, reads it back through B's API and waits for it on B's stream, then
# stops both processes with SIGTERM and checks that they exit with status 0.
#
#   POSTGRES_URL='postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable' examples/twoprocs/run.sh
#
# POSTGRES_URL: a database the script may create a schema in (default
# above). The schema (twoprocs_<random>) is dropped at the end when psql is
# installed. Needs: go, curl. Exits non-zero on any failure.
set -euo pipefail

PG_URL=${POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d)
SCHEMA="twoprocs_$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
PIDS=()

say() { printf '%s\n' "$*"; }
fail() { say "FAIL: $*" >&2; exit 1; }

# stop PID NAME: SIGTERM, then wait at most 15 s for the process to exit
# (the drain delay below is 1 s); SIGKILL after that. Prints the status.
stop() {
  local pid=$1 name=$2 status=0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 150); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "$name: still running 15 s after SIGTERM; killing it" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || status=$?
  say "$name: exited with status $status"
  return "$status"
}

cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -KILL "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
    fi
  done
  if command -v psql >/dev/null 2>&1; then
    psql "$PG_URL" -qAtc "DROP SCHEMA IF EXISTS \"$SCHEMA\" CASCADE" >/dev/null 2>&1 || true
  else
    say "psql not found: drop the schema $SCHEMA by hand" >&2
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "== building the server (once)"
(cd "$ROOT" && go build -o "$WORK/chat-server" ./examples/server && go build -o "$WORK/jsonget" ./examples/twoprocs/jsonget)
SERVER=$WORK/chat-server
JSON=$WORK/jsonget

# Both processes read the same settings: the store (the database is all
# they share) and the schema. The store URL goes through the environment,
# not the command line, where ps would show a password.
export CHAT_STORE=$PG_URL CHAT_POSTGRES_SCHEMA=$SCHEMA
"$SERVER" migrate 2>"$WORK/migrate.log" || { cat "$WORK/migrate.log" >&2; fail "migrate"; }
ADMIN=$("$SERVER" admin create ops 2>"$WORK/admin.log") || { cat "$WORK/admin.log" >&2; fail "admin create"; }
say "== schema $SCHEMA migrated; admin \"ops\" created (its token was printed alone on stdout)"

# start NAME: one server on a free port; sets URL_NAME to its base URL and
# PID_NAME to its process id once it serves.
start() {
  local name=$1 log=$WORK/$1.log url=""
  "$SERVER" -addr 127.0.0.1:0 -log-format text -drain-delay 1s -shutdown-timeout 10s -chat-page=false 2>"$log" &
  local pid=$!
  PIDS+=("$pid")
  for _ in $(seq 1 300); do
    url=$(grep -o 'api=http://[^ ]*' "$log" | head -n1 | sed 's|^api=||; s|/api/v2$||') || true
    [ -n "$url" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; fail "process $name exited at start"; }
    sleep 0.1
  done
  [ -n "$url" ] || { cat "$log" >&2; fail "process $name did not start within 30 s"; }
  curl -fsS --max-time 5 "$url/readyz" >/dev/null || fail "process $name is not ready"
  printf -v "URL_$name" '%s' "$url"
  printf -v "PID_$name" '%s' "$pid"
}
start A
start B
A=$URL_A B=$URL_B
say "A: pid $PID_A serving $A"
say "B: pid $PID_B serving $B"

# api BASE TOKEN METHOD PATH [JSON]: one API call; fails on a non-2xx status.
api() {
  local base=$1 token=$2 method=$3 path=$4 body=${5:-}
  if [ -n "$body" ]; then
    curl -fsS --max-time 10 -X "$method" -H "Authorization: Bearer $token" \
      -H 'Content-Type: application/json' -d "$body" "$base/api/v2$path"
  else
    curl -fsS --max-time 10 -X "$method" -H "Authorization: Bearer $token" "$base/api/v2$path"
  fi
}

ROOM=twoprocs-room
api "$A" "$ADMIN" POST /channel "{\"channelId\":\"$ROOM\",\"type\":\"standard\",\"userIds\":[\"alice\",\"bob\"]}" >/dev/null
ALICE=$(api "$A" "$ADMIN" POST /users/alice/token '{"ttl":600}' | "$JSON" token)
BOB=$(api "$A" "$ADMIN" POST /users/bob/token '{"ttl":600}' | "$JSON" token)
say "== through A: channel $ROOM with members alice and bob; user tokens for both"

# bob's event stream on B, bounded by --max-time.
STREAM=$WORK/stream.txt
curl -sN --max-time 30 -H 'Accept: text/event-stream' -H "Authorization: Bearer $BOB" "$B/api/v2/events" >"$STREAM" &
PIDS+=("$!")
CURL_PID=$!
for _ in $(seq 1 100); do
  grep -q '^event: stream.didConnect' "$STREAM" && break
  sleep 0.1
done
grep -q '^event: stream.didConnect' "$STREAM" || fail "bob's stream on B did not connect"
say "== bob's event stream connected to B"

TEXT="hello from A $(date +%s%N)"
POSTED=$(api "$A" "$ALICE" POST /message "{\"channelId\":\"$ROOM\",\"type\":\"text\",\"data\":{\"text\":\"$TEXT\"}}")
MID=$(printf '%s' "$POSTED" | "$JSON" messages.0.messageId)
say "A: alice posted message $MID: $TEXT"

READ=$(api "$B" "$BOB" POST /messages "{\"channelId\":\"$ROOM\",\"options\":{\"last\":1}}")
[ "$(printf '%s' "$READ" | "$JSON" messages.0.messageId)" = "$MID" ] || fail "B's API does not return message $MID: $READ"
say "B API: message $MID by $(printf '%s' "$READ" | "$JSON" messages.0.userId): $(printf '%s' "$READ" | "$JSON" messages.0.data.text)"

FRAME=""
for _ in $(seq 1 150); do
  FRAME=$(grep -A1 '^event: message.didCreate' "$STREAM" | sed -n 's/^data: //p' | head -n1) || true
  [ -n "$FRAME" ] && break
  sleep 0.1
done
[ -n "$FRAME" ] || { cat "$STREAM" >&2; fail "bob's stream on B received no message.didCreate within 15 s"; }
[ "$(printf '%s' "$FRAME" | "$JSON" data.messages.0.messageId)" = "$MID" ] || fail "B's stream sent another message: $FRAME"
say "B stream: $(printf '%s' "$FRAME" | "$JSON" event) $MID: $(printf '%s' "$FRAME" | "$JSON" data.messages.0.data.text)"
kill "$CURL_PID" 2>/dev/null || true
wait "$CURL_PID" 2>/dev/null || true

say "== stopping A and B (SIGTERM)"
stop "$PID_A" A || fail "A did not exit cleanly"
stop "$PID_B" B || fail "B did not exit cleanly"
grep -q 'shutdown complete' "$WORK/A.log" || fail "A did not log its shutdown"
grep -q 'shutdown complete' "$WORK/B.log" || fail "B did not log its shutdown"
say "OK: a message posted through A was read through B's API and received live on B's event stream"
