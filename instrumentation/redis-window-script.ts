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
// Request admission reserves a whole request at the door and counts its calls when they are
// used (windowAtUse): such an admission is a hold (field `p<slot>`, their sum `psum`), kept
// against the window until its calls are charged or it is settled, and released when its slot
// leaves the window (a replica that died never settles it). The check counts window + holds.
//
// KEYS[1] = the window. ARGV = limit (tokens per window), windowMs, op, carry, flags, op args:
// - flags: 1 = recent (see above), + 2 = send what leaves the window when (reservations stay
//   queued at the caller beyond this run: it answers fundableInMs from that);
// - carry: tokens a replica admitted from its local fallback while Redis was unreachable,
//   counted now (before the op) so the window knows them once Redis answers again;
// - op "take", args = amounts in FIFO order, a hold's prefixed with "p": admits the longest
//   prefix that fits (more than the limit fits an empty window only); for the first that does
//   not fit, the ms until it would (or until `blocked`);
// - op "settle", args = quadruples (slot, delta, hold slot, release): takes back up to
//   `release` from the hold of that slot; corrects the admission's slot by delta (actual −
//   counted) while it is live (never below zero); a debt whose slot is gone (slot 0: a charge,
//   a use counted now) is counted now;
// - op "block", args = ms: no admission for that long (the longest block stands);
// - op "peek": nothing (the restart guard and the carry still apply).
// Returns { admitted count, window sum (string: Lua numbers become integers), wait ms, the
// slot admissions were counted in (string), 1 if the key was missing, the holds' sum (string),
// then when the window and holds fill at least half the limit (or the op is peek or a take
// that did not fit, or flags ask): pairs (ms from now, tokens) of what leaves the window
// when, in order }.
export const ROLLING_WINDOW_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local window_ms = tonumber(ARGV[2])
local op = ARGV[3]
local carry = tonumber(ARGV[4])
local flags = tonumber(ARGV[5])
local recent = flags % 2 == 1
local send_leaving = flags >= 2
local per_window = 100
local live = per_window + 1
local slot_ms = window_ms / per_window
local key = KEYS[1]
local function field(s) return string.format('%.0f', s) end
local function hold_field(s) return 'p' .. field(s) end
local slot = math.floor(now / slot_ms)
local state = redis.call('HMGET', key, 'sum', 'cur', 'blocked', 'psum')
local sum = tonumber(state[1])
local cur = tonumber(state[2])
local blocked = tonumber(state[3]) or 0
local psum = tonumber(state[4]) or 0
local fresh = 0
local changed = op ~= 'peek'
if sum == nil or cur == nil then
  fresh = 1
  sum = 0
  psum = 0
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
    psum = 0
  else
    local gone = {}
    for s = cur - live + 1, slot - live do
      gone[#gone + 1] = field(s)
      gone[#gone + 1] = hold_field(s)
    end
    if #gone > 0 then
      local values = redis.call('HMGET', key, unpack(gone))
      for i = 1, #gone, 2 do
        sum = sum - (tonumber(values[i]) or 0)
        psum = psum - (tonumber(values[i + 1]) or 0)
      end
      redis.call('HDEL', key, unpack(gone))
    end
  end
  cur = slot
  changed = true
end
local function count_now(tokens)
  redis.call('HINCRBYFLOAT', key, field(cur), tokens)
  sum = sum + tokens
end
-- What leaves the window (admissions and holds) slot by slot: { ms from now, tokens }, in order.
local function leaving()
  local names = {}
  for s = cur - live + 1, cur do
    names[#names + 1] = field(s)
    names[#names + 1] = hold_field(s)
  end
  local values = redis.call('HMGET', key, unpack(names))
  local out = {}
  for j = 1, live do
    local v = (tonumber(values[2 * j - 1]) or 0) + (tonumber(values[2 * j]) or 0)
    if v > 1e-6 then out[#out + 1] = { (cur + j) * slot_ms - now, v } end
  end
  return out
end
if carry > 0 then
  count_now(carry)
  changed = true
end
local granted = 0
local wait_ms = 0
local leaves = nil
if op == 'take' then
  if now < blocked then
    wait_ms = blocked - now
  else
    local taken = 0
    local held = 0
    for i = 6, #ARGV do
      local hold = string.sub(ARGV[i], 1, 1) == 'p'
      local amount = tonumber(hold and string.sub(ARGV[i], 2) or ARGV[i])
      -- More than the limit fits an empty window only.
      local excess = sum + psum + taken + held
      if amount <= limit then excess = excess + amount - limit end
      if excess > 1e-6 then
        leaves = leaving()
        local freed = 0
        wait_ms = window_ms + slot_ms
        for _, leave in ipairs(leaves) do
          freed = freed + leave[2]
          if freed + 1e-6 >= excess then
            wait_ms = leave[1]
            break
          end
        end
        break
      end
      if hold then held = held + amount else taken = taken + amount end
      granted = granted + 1
    end
    if taken > 0 then count_now(taken) end
    if held > 0 then
      redis.call('HINCRBYFLOAT', key, hold_field(cur), held)
      psum = psum + held
    end
  end
elseif op == 'settle' then
  for i = 6, #ARGV - 3, 4 do
    local s = tonumber(ARGV[i])
    local delta = tonumber(ARGV[i + 1])
    local h = tonumber(ARGV[i + 2])
    local release = tonumber(ARGV[i + 3])
    if release > 0 and h > cur - live then
      local v = tonumber(redis.call('HGET', key, hold_field(h)))
      if v then
        local back = math.min(release, v)
        redis.call('HINCRBYFLOAT', key, hold_field(h), -back)
        psum = psum - back
      end
    end
    local v = nil
    if s > cur - live then v = tonumber(redis.call('HGET', key, field(s))) end
    if v then
      local applied = math.max(delta, -v)
      redis.call('HINCRBYFLOAT', key, field(s), applied)
      sum = sum + applied
    elseif delta > 0 then
      count_now(delta)
    end
  end
elseif op == 'block' then
  blocked = math.max(blocked, now + tonumber(ARGV[6]))
end
if math.abs(sum) < 1e-6 then sum = 0 end
if math.abs(psum) < 1e-6 then psum = 0 end
if changed then
  redis.call('HSET', key, 'sum', string.format('%.17g', sum), 'cur', field(cur), 'blocked', field(blocked), 'psum', string.format('%.17g', psum))
  redis.call('PEXPIRE', key, math.ceil(math.max(3 * window_ms, blocked - now + window_ms)))
end
local reply = { granted, string.format('%.17g', sum), math.max(0, math.ceil(wait_ms)), field(cur), fresh, string.format('%.17g', psum) }
if leaves == nil and (op == 'peek' or send_leaving or sum + psum >= limit / 2) then leaves = leaving() end
if leaves then
  for _, leave in ipairs(leaves) do
    reply[#reply + 1] = math.max(0, math.ceil(leave[1]))
    reply[#reply + 1] = string.format('%.17g', leave[2])
  end
end
return reply
`;
