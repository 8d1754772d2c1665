-- wrk script of bench/service.py: each wrk thread owns one connection and
-- replays whole games, move after move, from its own file
-- $RY_BENCH_DIR/client-<n>.tsv (one line per move:
-- <game index> TAB <path> TAB <seat token> TAB <JSON body with expectedVersion>).
-- A move is only sent after the previous one was answered 200; any other
-- answer is counted and the rest of that game skipped. With RY_BENCH_WRAP=1
-- (the floor, which ignores the moves) a thread starts over when it runs
-- out; otherwise it stops and reports itself exhausted.
-- done() writes key TAB value lines to $RY_BENCH_DIR/result.tsv.

local dir = os.getenv("RY_BENCH_DIR")
local wrap = os.getenv("RY_BENCH_WRAP") == "1"
local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end

local games = {}
local g, m = 1, 1
ok, bad, games_done, exhausted, first_error = 0, 0, 0, 0, ""

function init(args)
  local current, last = nil, nil
  for line in io.lines(dir .. "/client-" .. tid .. ".tsv") do
    local gi, path, token, body = line:match("^([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)$")
    if gi ~= last then
      current = {}
      table.insert(games, current)
      last = gi
    end
    local headers = {
      ["Authorization"] = "Bearer " .. token,
      ["Content-Type"] = "application/json",
    }
    table.insert(current, wrk.format("POST", path, headers, body))
  end
end

function request()
  if g > #games then
    if wrap then
      g, m = 1, 1
    else
      exhausted = 1
      wrk.thread:stop()
      return wrk.format("GET", "/healthz")
    end
  end
  return games[g][m]
end

function response(status, headers, body)
  if g > #games then
    return
  end
  if status == 200 then
    ok = ok + 1
    m = m + 1
    if m > #games[g] then
      games_done = games_done + 1
      g, m = g + 1, 1
    end
  else
    bad = bad + 1
    if first_error == "" then
      first_error = status .. " " .. string.sub(body or "", 1, 300):gsub("[\t\r\n]", " ")
    end
    g, m = g + 1, 1
  end
end

function done(summary, latency, requests)
  local out = {
    requests = summary.requests,
    duration_us = summary.duration,
    err_connect = summary.errors.connect,
    err_read = summary.errors.read,
    err_write = summary.errors.write,
    err_status = summary.errors.status,
    err_timeout = summary.errors.timeout,
    p50_us = latency:percentile(50),
    p90_us = latency:percentile(90),
    p99_us = latency:percentile(99),
    mean_us = latency.mean,
    max_us = latency.max,
    ok = 0,
    bad = 0,
    games_done = 0,
    exhausted = 0,
    first_error = "",
  }
  for _, thread in ipairs(threads) do
    out.ok = out.ok + thread:get("ok")
    out.bad = out.bad + thread:get("bad")
    out.games_done = out.games_done + thread:get("games_done")
    out.exhausted = out.exhausted + thread:get("exhausted")
    local e = thread:get("first_error")
    if out.first_error == "" and e ~= nil and e ~= "" then
      out.first_error = e
    end
  end
  local f = assert(io.open(dir .. "/result.tsv", "w"))
  for k, v in pairs(out) do
    f:write(k, "\t", tostring(v), "\n")
  end
  f:close()
end
