"""Lua scripts of the Redis working-state store (redis.py): each runs atomically in Redis."""

APPEND = """
local next_seq = math.max(tonumber(redis.call('HGET', KEYS[1], 'next_seq') or '1'), tonumber(ARGV[3]))
local seqs = {}
for i = 4, #ARGV do
  redis.call('ZADD', KEYS[2], next_seq, string.format('%d', next_seq) .. ':' .. ARGV[i])
  seqs[#seqs + 1] = next_seq
  next_seq = next_seq + 1
end
redis.call('HSETNX', KEYS[1], 'folded_through', '0')
redis.call('HSETNX', KEYS[1], 'summary', '')
redis.call('HSETNX', KEYS[1], 'summary_tokens', '0')
redis.call('HSET', KEYS[1], 'next_seq', next_seq, 'updated_at', ARGV[2])
redis.call('SADD', KEYS[3], ARGV[1])
return seqs
"""

DROP_MESSAGES = """
local dropped = 0
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local colon = string.find(member, ':', 1, true)
  if colon then
    for i = 1, #ARGV do
      local head = '[' .. ARGV[i] .. ','
      if string.sub(member, colon + 1, colon + #head) == head then
        redis.call('ZREM', KEYS[1], member)
        dropped = dropped + 1
        break
      end
    end
  end
end
return dropped
"""

# Compare-and-set of one member: the old one exactly as loaded, the new one at its score.
EDIT_MESSAGE = """
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
return 1
"""

COMMIT_FOLD = """
local current = tonumber(redis.call('HGET', KEYS[1], 'folded_through') or '0')
if current ~= tonumber(ARGV[1]) or tonumber(redis.call('HGET', KEYS[1], 'next_seq') or '1') <= tonumber(ARGV[2]) then
  return 0
end
if ARGV[7] == '1' and (redis.call('HGET', KEYS[1], 'summary') or '') ~= ARGV[8] then
  return 0
end
redis.call('HSETNX', KEYS[1], 'next_seq', '1')
redis.call('HSET', KEYS[1], 'folded_through', ARGV[2], 'summary', ARGV[3], 'summary_tokens', ARGV[4],
           'updated_at', ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[2])
redis.call('SADD', KEYS[3], ARGV[6])
return 1
"""

# The list holds positions counter-LLEN+1 .. counter; a reader further behind
# (or from another generation, or ahead of a lost log) must rebuild: flag 0.
CLEAR = """
local existed = redis.call('EXISTS', KEYS[1])
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SREM', KEYS[3], ARGV[1])
return existed
"""
