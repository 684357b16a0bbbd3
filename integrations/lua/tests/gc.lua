-- SPDX-License-Identifier: MIT
-- collectgarbage cycles: full collections, incremental steps, generational
-- mode, weak tables, finalizers, and garbage made in between.
local finalized = 0
local mt = { __gc = function(o) finalized = finalized + o.w end }
local rounds = tonumber(arg and arg[1]) or 30
for r = 1, rounds do
  for i = 1, 500 do setmetatable({ w = 1 }, mt) end
  local junk = {}
  for i = 1, 2000 do junk[i] = { i, tostring(i), { i } } end
  junk = nil
  if r % 3 == 0 then
    collectgarbage("collect")
  else
    collectgarbage("step", 100)
  end
end
collectgarbage("collect")
collectgarbage("collect")
print("finalized", finalized)

local weak = setmetatable({}, { __mode = "v" })
local strong = {}
for i = 1, 1000 do
  local o = { i }
  weak[i] = o
  if i % 10 == 0 then strong[#strong + 1] = o end
end
collectgarbage("collect")
local alive = 0
for _ in pairs(weak) do alive = alive + 1 end
print("weak", alive, #strong)

collectgarbage("generational")
local keep = {}
for r = 1, rounds do
  for i = 1, 1000 do keep[i % 100 + 1] = { r, i, ("x"):rep(i % 40) } end
  collectgarbage("step", 0)
end
collectgarbage("incremental")
collectgarbage("collect")
print("generational", #keep, keep[1][1], #keep[50][3])
print("running", collectgarbage("isrunning"))
