-- SPDX-License-Identifier: MIT
-- Closures: counters with shared upvalues, composition, memoisation,
-- varargs, recursion through upvalues, many short-lived closures.
local function counter()
  local n = 0
  return function(k) n = n + (k or 1); return n end, function() return n end
end
local inc, get = counter()
for i = 1, 1000 do inc(i % 3) end
print("counter", get())

local function compose(...)
  local fs = table.pack(...)
  return function(x)
    for i = fs.n, 1, -1 do x = fs[i](x) end
    return x
  end
end
local f = compose(function(x) return x + 1 end, function(x) return x * 2 end, function(x) return x - 3 end)
local s = 0
for i = 1, 10000 do s = s + f(i) end
print("compose", s)

local function memo(fn)
  local cache = {}
  return function(n)
    local v = cache[n]
    if v == nil then v = fn(n); cache[n] = v end
    return v
  end
end
local fib
fib = memo(function(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end)
print("fib", fib(80))

local rounds = tonumber(arg and arg[1]) or 200
local total = 0
for r = 1, rounds do
  local fns = {}
  for i = 1, 200 do
    local captured = i * r
    fns[i] = function(y) return captured + y end
  end
  for i = 1, #fns do total = (total + fns[i](i)) % 1000000007 end
end
print("closures", rounds, total)
