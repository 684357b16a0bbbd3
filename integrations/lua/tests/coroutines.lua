-- SPDX-License-Identifier: MIT
-- Coroutines: generators, a producer/filter/consumer pipeline, many live
-- coroutines at once, errors inside coroutines, coroutine.close.
local function gen(n)
  return coroutine.wrap(function() for i = 1, n do coroutine.yield(i) end end)
end
local s = 0
for v in gen(10000) do s = s + v end
print("gen", s)

local function producer(n)
  return coroutine.create(function()
    for i = 1, n do coroutine.yield(string.format("item%05d", i)) end
  end)
end
local function filter(src)
  return coroutine.create(function()
    while true do
      local ok, v = coroutine.resume(src)
      if not v then return end
      if tonumber(v:sub(5)) % 3 == 0 then coroutine.yield(v .. "!") end
    end
  end)
end
local f = filter(producer(3000))
local n, last = 0, nil
while true do
  local ok, v = coroutine.resume(f)
  if not v then break end
  n = n + 1; last = v
end
print("pipeline", n, last)

local rounds = tonumber(arg and arg[1]) or 20
local total = 0
for r = 1, rounds do
  local cos = {}
  for i = 1, 300 do
    cos[i] = coroutine.create(function(a)
      local acc = a
      for k = 1, 5 do acc = acc + coroutine.yield(acc) end
      return acc
    end)
  end
  for step = 1, 6 do
    for i = 1, #cos do
      local ok, v = coroutine.resume(cos[i], i + step)
      total = (total + (v or 0)) % 1000000007
    end
  end
  if r % 2 == 0 then for i = 1, #cos, 7 do coroutine.close(cos[i]) end end
end
print("many", rounds, total)

local co = coroutine.create(function() error("boom") end)
local ok, err = coroutine.resume(co)
print("error", ok, (err:gsub("^.-:%d+: ", "")), coroutine.status(co))
