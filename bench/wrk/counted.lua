-- counted.lua — for the load-independent measurements (callgrind): after BENCH_COUNT responses
-- (default 20000) the wrk thread stops and touches the file BENCH_MARKER; the harness then
-- interrupts wrk (SIGINT), which prints its summary at once. The harness divides by the number
-- of requests wrk reports, so the few responses in flight at the stop do not matter.
local limit = tonumber(os.getenv("BENCH_COUNT") or "20000")
local marker = os.getenv("BENCH_MARKER")
local n = 0

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
