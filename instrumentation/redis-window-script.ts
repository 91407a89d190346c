// The Lua script behind RedisTokenBudget: the counted tokens admitted by every replica in the
// rolling window (the provider's quota window), kept in one Redis hash and changed only by
// this script, which Redis runs atomically. The check and the admission are one run.
//
// The hash holds the tokens admitted per slot of 1/100 of the window (field = slot number),
// their sum, the newest slot seen and `blocked` (no admission before this Redis time, ms: a
// provider 429's retry delay shared by every replica). A slot is counted until its end is a
// window old, so no window is ever undercounted (the price: at most one slot of extra wait).
// Time is Redis `TIME`, so replicas with skewed clocks agree.
//
// A key that is missing while the caller saw the fleet admit within the last window (ARGV
// `recent`) means Redis lost the window (a restart without persistence, a flush): the script
// counts a full window at once, so a restarted Redis never starts from a full bucket. The key
// expires three windows after its last change (and never before `blocked`), so an idle fleet's
// key is gone and a missing key without `recent` starts empty.
//
// KEYS[1] = the window. ARGV = limit (tokens per window), windowMs, op, carry, recent, op args:
// - carry: tokens a replica admitted from its local fallback while Redis was unreachable,
//   counted now (before the op) so the window knows them once Redis answers again;
// - op "take", args = amounts in FIFO order: admits the longest prefix that fits (more than
//   the limit fits an empty window only); for the first that does not fit, the ms until it
//   would (or until `blocked`);
// - op "settle", args = pairs (slot, delta = actual − reserved): corrects the admission's slot
//   while it is live (never below zero); a debt whose slot is gone is counted now;
// - op "block", args = ms: no admission for that long (the longest block stands);
// - op "peek": nothing (the restart guard and the carry still apply).
// Returns { admitted count, window sum (string: Lua numbers become integers), wait ms, the
// slot admissions were counted in (string), 1 if the key was missing }.
export const ROLLING_WINDOW_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local window_ms = tonumber(ARGV[2])
local op = ARGV[3]
local carry = tonumber(ARGV[4])
local recent = ARGV[5] == '1'
local per_window = 100
local live = per_window + 1
local slot_ms = window_ms / per_window
local key = KEYS[1]
local function field(s) return string.format('%.0f', s) end
local slot = math.floor(now / slot_ms)
local state = redis.call('HMGET', key, 'sum', 'cur', 'blocked')
local sum = tonumber(state[1])
local cur = tonumber(state[2])
local blocked = tonumber(state[3]) or 0
local fresh = 0
local changed = op ~= 'peek'
if sum == nil or cur == nil then
  fresh = 1
  sum = 0
  cur = slot
  if recent then
    redis.call('HSET', key, field(cur), limit)
    sum = limit
    changed = true
  end
elseif slot > cur then
  if slot - cur >= live then
    redis.call('DEL', key)
    sum = 0
  else
    local gone = {}
    for s = cur - live + 1, slot - live do gone[#gone + 1] = field(s) end
    if #gone > 0 then
      local values = redis.call('HMGET', key, unpack(gone))
      for i = 1, #gone do
        local v = tonumber(values[i])
        if v then sum = sum - v end
      end
      redis.call('HDEL', key, unpack(gone))
    end
  end
  cur = slot
  changed = true
end
if carry > 0 then
  redis.call('HINCRBYFLOAT', key, field(cur), carry)
  sum = sum + carry
  changed = true
end
local granted = 0
local wait_ms = 0
if op == 'take' then
  if now < blocked then
    wait_ms = blocked - now
  else
    local taken = 0
    for i = 6, #ARGV do
      local amount = tonumber(ARGV[i])
      local fits
      if amount > limit then fits = sum + taken <= 1e-6 else fits = sum + taken + amount <= limit + 1e-6 end
      if not fits then
        local excess
        if amount > limit then excess = sum + taken else excess = sum + taken + amount - limit end
        local names = {}
        for s = cur - live + 1, cur do names[#names + 1] = field(s) end
        local values = redis.call('HMGET', key, unpack(names))
        local freed = 0
        wait_ms = window_ms + slot_ms
        for j = 1, #names do
          local v = tonumber(values[j])
          if v then freed = freed + v end
          if freed + 1e-6 >= excess then
            wait_ms = (cur + j) * slot_ms - now
            break
          end
        end
        break
      end
      taken = taken + amount
      granted = granted + 1
    end
    if taken > 0 then
      redis.call('HINCRBYFLOAT', key, field(cur), taken)
      sum = sum + taken
    end
  end
elseif op == 'settle' then
  for i = 6, #ARGV - 1, 2 do
    local s = tonumber(ARGV[i])
    local delta = tonumber(ARGV[i + 1])
    local v = nil
    if s > cur - live then v = tonumber(redis.call('HGET', key, field(s))) end
    if v then
      local applied = math.max(delta, -v)
      redis.call('HINCRBYFLOAT', key, field(s), applied)
      sum = sum + applied
    elseif delta > 0 then
      redis.call('HINCRBYFLOAT', key, field(cur), delta)
      sum = sum + delta
    end
  end
elseif op == 'block' then
  blocked = math.max(blocked, now + tonumber(ARGV[6]))
end
if math.abs(sum) < 1e-6 then sum = 0 end
if changed then
  redis.call('HSET', key, 'sum', string.format('%.17g', sum), 'cur', field(cur), 'blocked', field(blocked))
  redis.call('PEXPIRE', key, math.ceil(math.max(3 * window_ms, blocked - now + window_ms)))
end
return { granted, string.format('%.17g', sum), math.max(0, math.ceil(wait_ms)), field(cur), fresh }
`;
