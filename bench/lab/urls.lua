-- wrk script: every request picks a URL at random from a list file (one path
-- a line, given after `--`), and done() prints the figures as one JSON line
-- that bench/lab/load.py reads ("LABJSON {...}").
local paths = {}
local counter = 0
local threads = {}

function setup(thread)
   counter = counter + 1
   thread:set("id", counter)
   table.insert(threads, thread)
end

function init(args)
   for line in io.lines(args[1]) do
      if #line > 0 then paths[#paths + 1] = line end
   end
   math.randomseed(os.time() * 1000 + id)
end

function request()
   return wrk.format("GET", paths[math.random(#paths)])
end

function done(summary, latency, requests)
   local e = summary.errors
   local pct = {}
   for _, p in ipairs({50, 90, 99, 99.9}) do
      pct[#pct + 1] = string.format('"%s": %d', tostring(p), latency:percentile(p))
   end
   io.write(string.format(
      'LABJSON {"duration_us": %d, "requests": %d, "bytes": %d, ' ..
      '"errors": {"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}, ' ..
      '"latency_us": {"mean": %.1f, "stdev": %.1f, "max": %d, %s}}\n',
      summary.duration, summary.requests, summary.bytes,
      e.connect, e.read, e.write, e.status, e.timeout,
      latency.mean, latency.stdev, latency.max, table.concat(pct, ", ")))
end
