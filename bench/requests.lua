-- wrk script: send each request of a pool file once, in order, cycling only if the run outlasts
-- the pool. One request a line, tab-separated: METHOD, PATH, BODY (empty for none; one-line
-- JSON), then any number of "Name: value" headers. bench.cluster writes these pools: a project
-- id in every path, so HAProxy spreads them over the nodes.
-- Usage: wrk ... -s bench/requests.lua URL -- POOL_FILE

local requests = {}
-- Before the run wrk checks the script with one request() call on the first thread's state
-- (script_verify_request), and that request is never sent: let it take the last line, so the
-- first one goes out first (the check of bench.cluster reads the first project's first
-- transaction, paid by the first line).
local next_index = -1

function init(args)
  for line in io.lines(args[1]) do
    local fields = {}
    for field in (line .. "\t"):gmatch("([^\t]*)\t") do
      fields[#fields + 1] = field
    end
    local headers = {}
    for i = 4, #fields do
      local name, value = fields[i]:match("^([^:]+):%s*(.*)$")
      headers[name] = value
    end
    if fields[3] ~= "" then
      headers["Content-Type"] = "application/json"
    end
    requests[#requests + 1] = wrk.format(fields[1], fields[2], headers, fields[3] ~= "" and fields[3] or nil)
  end
end

function request()
  next_index = next_index % #requests + 1
  return requests[next_index]
end
