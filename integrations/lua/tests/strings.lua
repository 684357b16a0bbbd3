-- SPDX-License-Identifier: MIT
-- String building: concatenation in loops, table.concat, string.rep,
-- format, gsub with captures and functions, gmatch, byte/char, long strings.
local rounds = tonumber(arg and arg[1]) or 30
local acc = 0
for r = 1, rounds do
  local s = ""
  for i = 1, 300 do s = s .. string.char(97 + (i * r) % 26) end
  local parts = {}
  for i = 1, 1000 do parts[#parts + 1] = string.format("%d:%s;", i, s:sub(i % 50 + 1, i % 50 + 8)) end
  local joined = table.concat(parts)
  local upper = joined:gsub("(%a+)", function(w) return w:upper() end)
  local count = 0
  for w in upper:gmatch("%u+") do count = count + #w end
  local rep = string.rep("ab", 5000 + r, ",")
  local rev = rep:reverse()
  acc = (acc + #joined + count + #rep + rev:byte(7) + #upper) % 1000000007
end
print("strings", rounds, acc)

local words = {}
for w in ("the quick brown fox jumps over the lazy dog again and again"):gmatch("%a+") do
  words[w] = (words[w] or 0) + 1
end
local keys = {}
for k in pairs(words) do keys[#keys + 1] = k end
table.sort(keys)
local out = {}
for _, k in ipairs(keys) do out[#out + 1] = k .. "=" .. words[k] end
print(table.concat(out, " "))
print(("%5.2f|%-6s|%x|%q"):format(3.14159, "lua", 48879, "a\nb"))
