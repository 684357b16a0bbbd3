-- SPDX-License-Identifier: MIT
-- Table churn: arrays that grow and shrink, hash parts filled and emptied,
-- nested records created and dropped, table.sort / insert / remove / move.
local function checksum(t)
  local s = 0
  for i = 1, #t do s = (s * 31 + t[i]) % 1000000007 end
  return s
end

local rounds = tonumber(arg and arg[1]) or 40
local total = 0
for r = 1, rounds do
  local a = {}
  for i = 1, 2000 do a[i] = (i * 7919 + r) % 10007 end
  table.sort(a)
  for i = 1, 500 do table.remove(a, 1 + (i * 13) % #a) end
  for i = 1, 300 do table.insert(a, 1 + (i * 17) % #a, i) end
  local h = {}
  for i = 1, 1500 do h["k" .. (i * r % 997)] = { id = i, tags = { i % 3, i % 5 } } end
  local n = 0
  for k, v in pairs(h) do n = n + v.id + #v.tags end
  for i = 1, 997, 2 do h["k" .. i] = nil end
  local left = 0
  for _ in pairs(h) do left = left + 1 end
  local b = table.move(a, 1, 1000, 1, {})
  total = (total + checksum(a) + checksum(b) + n + left) % 1000000007
end
print("tables", rounds, total)

-- a sparse table that becomes dense, and back
local t = {}
for i = 1, 10000, 3 do t[i] = i end
for i = 2, 10000, 3 do t[i] = -i end
for i = 1, 10000, 3 do t[i] = nil end
local keys = {}
for k in pairs(t) do keys[#keys + 1] = k end
table.sort(keys)
print("sparse", #keys, keys[1], keys[#keys])
