-- wrk script for `tierscope serve`: POSTs /embed with a JSON body of N single-letter
-- words (N+2 tokens with [CLS] and [SEP]), then prints latency percentiles and the
-- number of non-200 answers. N comes from `wrk ... -- N`, else $TIERSCOPE_WORDS, else 126.
--   wrk -t2 -c16 -d10s -s bench/serve/embed.lua http://127.0.0.1:8080 -- 126
-- wrk is closed-loop and times each request from its send, so under overload its
-- latencies are optimistic (coordinated omission); `tierscope load` (open loop) is not.

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

local function words(n, seed)
  math.randomseed(seed)
  local out = {}
  for i = 1, n do
    out[i] = string.char(96 + math.random(26))  -- 'a'..'z'
  end
  return table.concat(out, " ")
end

function init(args)
  local n = tonumber(args[1] or os.getenv("TIERSCOPE_WORDS") or "126")
  if n == nil or n < 1 then
    io.stderr:write("embed.lua: the word count must be a whole number >= 1 (wrk ... -- N)\n")
    os.exit(2)
  end
  n = math.floor(n)
  non200 = 0
  statuses = {}
  local body = '{"inputs": "' .. words(n, os.time() + n) .. '"}'
  req = wrk.format("POST", "/embed", {["Content-Type"] = "application/json"}, body)
  word_count = n
end

function request()
  return req
end

function response(status, headers, body)
  if status ~= 200 then
    non200 = non200 + 1
    statuses[status] = (statuses[status] or 0) + 1
  end
end

function done(summary, latency, requests)
  local non200_total, by_status, n = 0, {}, nil
  for _, t in ipairs(threads) do
    non200_total = non200_total + (t:get("non200") or 0)
    n = n or t:get("word_count")
    for code, count in pairs(t:get("statuses") or {}) do
      by_status[code] = (by_status[code] or 0) + count
    end
  end
  local seconds = summary.duration / 1e6
  io.write(string.format("embed: %s words (%s tokens) per request\n", tostring(n),
                         n and tostring(n + 2) or "?"))
  io.write(string.format("requests %d in %.2f s: %.1f req/s\n", summary.requests, seconds,
                         summary.requests / seconds))
  io.write(string.format("latency ms  p50 %.2f  p90 %.2f  p99 %.2f  p99.9 %.2f  max %.2f  mean %.2f\n",
                         latency:percentile(50) / 1000, latency:percentile(90) / 1000,
                         latency:percentile(99) / 1000, latency:percentile(99.9) / 1000,
                         latency.max / 1000, latency.mean / 1000))
  local codes = {}
  for code, count in pairs(by_status) do
    table.insert(codes, string.format("%d: %d", code, count))
  end
  table.sort(codes)
  io.write(string.format("non-200 responses %d%s\n", non200_total,
                         #codes > 0 and (" (" .. table.concat(codes, ", ") .. ")") or ""))
  local e = summary.errors
  io.write(string.format("socket errors connect %d, read %d, write %d, timeout %d\n",
                         e.connect, e.read, e.write, e.timeout))
end
