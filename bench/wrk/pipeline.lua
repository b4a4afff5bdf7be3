-- pipeline.lua — wrk sends 16 requests for the same path back to back on each connection
-- (HTTP/1.1 pipelining) and waits for the 16 responses; wrk counts each response.
-- Path: wrk's URL path. Depth: BENCH_PIPELINE_DEPTH (default 16).
local depth = tonumber(os.getenv("BENCH_PIPELINE_DEPTH") or "16")
local req

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
