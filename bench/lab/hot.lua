-- wrk script for a hot load: one URL (wrk's own), and the successful
-- responses counted per wall-clock second, which done() prints as one JSON
-- line that bench/lab/load.py reads ("LABHOT {...}"). os.time() has whole
-- seconds: the first and last seconds of a run are partial.
local threads = {}

function setup(thread)
   table.insert(threads, thread)
end

function init(args)
   counts = {}
end

function response(status, headers, body)
   if status == 200 then
      local s = os.time()
      counts[s] = (counts[s] or 0) + 1
   end
end

function done(summary, latency, requests)
   local total = {}
   for _, t in ipairs(threads) do
      local c = t:get("counts")
      for s, n in pairs(c) do
         total[s] = (total[s] or 0) + n
      end
   end
   local parts = {}
   for s, n in pairs(total) do
      parts[#parts + 1] = string.format('"%d": %d', s, n)
   end
   io.write(string.format('LABHOT {"duration_us": %d, "requests": %d, "bins": {%s}}\n',
      summary.duration, summary.requests, table.concat(parts, ", ")))
end
