-- wrk script for the admin API targets that `go run ./bench/loadgen -serve`
-- starts. Environment: TOKEN (the admin token loadgen prints; ignored by the
-- ceiling target) and OP, "create" (create-message, the default) or "query"
-- (query-messages, the newest page of LAST messages, default 20). The URL
-- is the target's base, for example http://127.0.0.1:18081/api/v2.
--
--   TOKEN=... OP=create wrk -t1 -c64 -d10s --latency -s bench/api.lua http://127.0.0.1:18081/api/v2

local op = os.getenv("OP") or "create"
local token = os.getenv("TOKEN") or "none"
local last = tonumber(os.getenv("LAST") or "20")

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. token

local path, body
if op == "query" then
  path = "/messages"
  body = string.format('{"channelId":"query","options":{"last":%d}}', last)
elseif op == "create" then
  path = "/message"
  body = '{"channelId":"bench","type":"text","data":{"text":"a message of about fifty bytes from the load test"}}'
else
  error("OP must be create or query")
end

-- wrk.path is the URL's path here. The request is static (no request()
-- or response() function), so wrk spends no time in Lua per request.
local base = wrk.path
if base == "/" then base = "" end
wrk.path = base .. path
wrk.body = body
