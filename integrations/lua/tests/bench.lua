-- SPDX-License-Identifier: MIT
-- The project's Lua benchmark (memres-bench scenario "lua", and a test):
-- what an embedded interpreter spends its allocations on -- binary trees
-- of tables, string building and interning, closures, table rehashing,
-- coroutines -- in one deterministic script.  arg[1]: size (default 10).
local size = tonumber(arg and arg[1]) or 10

local function tree(d)
  if d == 0 then return {} end
  d = d - 1
  return { tree(d), tree(d) }
end
local function check(t)
  if t[1] then return 1 + check(t[1]) + check(t[2]) end
  return 1
end
local maxd = 14
local long = tree(maxd) -- lives through the whole script
local trees = 0
for d = 4, maxd, 2 do
  for _ = 1, size * (1 << (maxd - d)) // 8 do trees = trees + check(tree(d)) end
end
print("trees", trees + check(long))

local words = 0
for r = 1, size * 20 do
  local parts = {}
  for i = 1, 200 do parts[i] = ("w%d_%d"):format(r % 97, i) end
  local s = table.concat(parts, " ")
  local seen = {}
  for w in s:gmatch("%S+") do seen[w] = (seen[w] or 0) + 1 end
  for k, v in pairs(seen) do words = words + v + #k end
end
print("words", words)

local acc = 0
for r = 1, size * 20 do
  local t = {}
  for i = 1, 500 do t["k" .. (i * r) % 1009] = function(x) return x + i end end
  for k, f in pairs(t) do acc = (acc + f(#k)) % 1000000007 end
end
print("closures", acc)

local co_sum = 0
for r = 1, size * 4 do
  local co = coroutine.wrap(function()
    for i = 1, 1000 do coroutine.yield({ i, tostring(i) }) end
  end)
  for _ = 1, 1000 do local v = co(); co_sum = co_sum + v[1] + #v[2] end
end
print("coroutines", co_sum)
