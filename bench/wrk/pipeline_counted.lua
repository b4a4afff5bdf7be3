-- pipeline_counted.lua — pipeline.lua's requests (BENCH_PIPELINE_DEPTH back to back per write)
-- with counted.lua's stop: after BENCH_COUNT responses the wrk thread stops and touches
-- BENCH_MARKER (for the load-independent callgrind measurement of pipelining).
local depth = tonumber(os.getenv("BENCH_PIPELINE_DEPTH") or "16")
local limit = tonumber(os.getenv("BENCH_COUNT") or "20000")
local marker = os.getenv("BENCH_MARKER")
local req
local n = 0

init = function(args)
   local r = {}
   for i = 1, depth do
      r[i] = wrk.format(nil)
   end
   req = table.concat(r)
end

request = function()
   return req
end

response = function(status, headers, body)
   n = n + 1
   if n == limit then
      if marker then
         local f = io.open(marker, "w")
         if f then f:close() end
      end
      wrk.thread:stop()
   end
end
