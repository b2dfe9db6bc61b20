-- wrk script: POST each delivery of a pool file ("<Stripe-Signature>\t<body>" per line) once,
-- in order, cycling only if the run outlasts the pool (the runner counts those duplicates).
-- Usage: wrk ... -s bench/webhook.lua URL -- POOL_FILE

local requests = {}
-- wrk checks the script with one request() call that is never sent (script_verify_request): let
-- it take the last line, so every delivery of a pool shorter than the run goes out
local next_index = -1

function init(args)
  for line in io.lines(args[1]) do
    local signature, body = line:match("^([^\t]*)\t(.*)$")
    requests[#requests + 1] = wrk.format("POST", nil, {
      ["Content-Type"] = "application/json",
      ["Stripe-Signature"] = signature,
    }, body)
  end
end

function request()
  next_index = next_index % #requests + 1
  return requests[next_index]
end
