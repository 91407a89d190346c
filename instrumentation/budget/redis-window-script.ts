// The Lua script behind RedisTokenBudget: the counted tokens admitted by every replica in the
// rolling window (the provider's quota window), kept in one Redis hash and changed only by
// this script, which Redis runs atomically. The check and the admission are one run.
//
// The hash holds the tokens admitted per slot of 1/REDIS_WINDOW_SLOTS (100) of the window (field = slot number),
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
// used (windowAtUse): such an admission is a hold, in parts, each kept against the window from
// the slot its calls are expected to start in (field `p<due slot>`, their sum `psum`, the
// newest due slot `pmax`) until they are charged or it is settled, and released when that
// slot leaves the window (a replica that died never settles it). So a request's later calls
// do not idle the window while its first ones run: the window may take tokens that leave it
// before those calls start. The check: the window, the holds due by then and the new parts due
// by then never exceed the limit at any later time (holds are taken to stay until charged;
// what is charged leaves a window after). That rule is window-rule.ts's (fitsNow,
// excessNow, leavesInMs), proven equal by a differential property (redis-window-rule.test.ts).
//
// The budget's identity: the first run on a key stores its window (`win`) and configured
// limit (`cap`); a run with another window or limit is refused (an error reply starting
// BUDGET_CONFLICT, naming what the key holds and when it expires) and changes nothing, so two
// deployments with different quotas never count in one window by accident. No key TTL and no
// wait exceeds the window plus the longest request deadline (a `blocked` time, a hold's due
// slot or a stored state beyond it is clamped). A state whose slots are numbered beyond now
// (Redis time went back, or a key written before identities by another window) counts as lost.
//
// KEYS[1] = the window. ARGV = limit (tokens per window), windowMs, op, carry, flags, capacity
// (the configured limit: the identity), op args:
// - flags: 1 = recent (see above), + 2 = send what leaves the window when (reservations stay
//   queued at the caller beyond this run: it answers fundableInMs from that);
// - carry: tokens a replica admitted from its local fallback while Redis was unreachable,
//   counted now (before the op) so the window knows them once Redis answers again;
// - op "take", args = amounts in FIFO order, a hold's prefixed with "p" and given as parts
//   `tokens@afterMs` joined by "," (ms after admission; a part is due in the slot that many
//   whole slots after the admission's): admits the longest prefix that fits (more than the
//   limit fits an empty window only); for the first that does not fit, the ms until it would
//   were all of it counted now (an upper bound; or until `blocked`);
// - op "settle", args = quadruples (slot, delta, hold slot, release): takes back up to
//   `release` from the hold of that slot; corrects the admission's slot by delta (actual −
//   counted) while it is live (never below zero); a debt whose slot is gone (slot 0: a charge,
//   a use counted now) is counted now;
// - op "block", args = ms: no admission for that long (the longest block stands);
// - op "peek": nothing (the restart guard and the carry still apply).
// Returns { admitted count, window sum (string: Lua numbers become integers), wait ms, the
// slot admissions were counted in (string), 1 if the key was missing, the holds' sum (string),
// the number of hold pairs H, ms since the slot began (string), then when the window and holds fill at least half the limit (or
// the op is peek or a take that did not fit, or flags ask): H pairs (ms from now until due,
// tokens) of the holds, and pairs (ms from now, tokens) of what leaves the window when, in
// order; else H = 0 and nothing more }.
import { MAX_REQUEST_DEADLINE_MS, REDIS_WINDOW_SLOTS } from '../defaults.ts';

/** The start of the script's error reply when a key belongs to another window or limit. */
export const BUDGET_CONFLICT_REPLY = 'BUDGET_CONFLICT';

/** The longest key TTL or wait the script answers, ms: the window plus the longest request deadline. */
export const maxBudgetTtlMs = (windowMs: number): number => windowMs + MAX_REQUEST_DEADLINE_MS;

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
local capacity = tonumber(ARGV[6])
local first_arg = 7
local max_ttl = window_ms + ${MAX_REQUEST_DEADLINE_MS}
local per_window = ${REDIS_WINDOW_SLOTS}
local live = per_window + 1
local slot_ms = window_ms / per_window
local key = KEYS[1]
local function field(s) return string.format('%.0f', s) end
local function hold_field(s) return 'p' .. field(s) end
local slot = math.floor(now / slot_ms)
local state = redis.call('HMGET', key, 'sum', 'cur', 'blocked', 'psum', 'pmax', 'win', 'cap')
local win = tonumber(state[6])
local cap = tonumber(state[7])
if (win and win ~= window_ms) or (cap and cap ~= capacity) then
  local ttl = redis.call('PTTL', key)
  if ttl < 0 or ttl > max_ttl then ttl = max_ttl end
  return redis.error_reply('${BUDGET_CONFLICT_REPLY} ' .. string.format('%.17g', win or 0) .. ' ' .. string.format('%.17g', cap or 0) .. ' ' .. ttl)
end
local sum = tonumber(state[1])
local cur = tonumber(state[2])
local blocked = math.min(tonumber(state[3]) or 0, now + max_ttl)
local psum = tonumber(state[4]) or 0
local pmax = tonumber(state[5]) or slot
-- Slots numbered beyond now (Redis time went back, or a state from before identities with another
-- window): the state is unusable, so it counts as lost (see the restart guard below).
if cur ~= nil and cur > slot + live then
  redis.call('DEL', key)
  sum = nil
end
local fresh = 0
local changed = op ~= 'peek'
if sum == nil or cur == nil then
  fresh = 1
  sum = 0
  psum = 0
  cur = slot
  pmax = slot
  if recent then
    redis.call('HSET', key, field(cur), limit)
    sum = limit
    changed = true
  end
elseif slot > cur then
  -- Slots whose end is a window old leave: the window's (up to cur) and the holds due in them.
  local first = cur - live + 1
  local counted = {}
  for s = first, math.min(slot - live, cur) do counted[#counted + 1] = field(s) end
  local held = {}
  for s = first, math.min(slot - live, pmax) do held[#held + 1] = hold_field(s) end
  for _, names in ipairs({ counted, held }) do
    if #names > 0 then
      local values = redis.call('HMGET', key, unpack(names))
      local gone = 0
      for i = 1, #names do gone = gone + (tonumber(values[i]) or 0) end
      if names == counted then sum = sum - gone else psum = psum - gone end
      redis.call('HDEL', key, unpack(names))
    end
  end
  cur = slot
  if pmax < cur then pmax = cur end
  changed = true
end
-- The window's live slots (w) and the holds by due slot (h), read once when a scheduled check
-- or the reply needs them; every change this run makes is written at once and kept in it.
local view = nil
local function count_now(tokens)
  redis.call('HINCRBYFLOAT', key, field(cur), tokens)
  sum = sum + tokens
  if view then view.w[cur] = view.w[cur] + tokens end
end
local function load_view()
  if view then return view end
  local names = {}
  for s = cur - live + 1, cur do names[#names + 1] = field(s) end
  for s = cur - live + 1, pmax do names[#names + 1] = hold_field(s) end
  local values = redis.call('HMGET', key, unpack(names))
  view = { w = {}, h = {} }
  for j = 1, live do view.w[cur - live + j] = tonumber(values[j]) or 0 end
  for j = live + 1, #names do
    local v = tonumber(values[j])
    if v and v > 1e-6 then view.h[cur - 2 * live + j] = v end
  end
  return view
end
-- Whether parts ({ due slot, tokens }) admitted now keep the window within the limit at every
-- later time: the peak can only rise when a hold or part falls due.
local function fits_scheduled(parts)
  local v = load_view()
  local times = { cur }
  for _, part in ipairs(parts) do if part[1] > cur then times[#times + 1] = part[1] end end
  for d in pairs(v.h) do if d > cur then times[#times + 1] = d end end
  for _, at in ipairs(times) do
    local total = 0
    for s = at - live + 1, cur do total = total + v.w[s] end
    for d, x in pairs(v.h) do if d <= at then total = total + x end end
    for _, part in ipairs(parts) do if part[1] <= at then total = total + part[2] end end
    if total > limit + 1e-6 then return false end
  end
  return true
end
-- What leaves the window slot by slot: { ms from now, tokens }, in order.
local function leaving()
  local v = load_view()
  local out = {}
  for s = cur - live + 1, cur do
    if v.w[s] > 1e-6 then out[#out + 1] = { (s + live) * slot_ms - now, v.w[s] } end
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
    for i = first_arg, #ARGV do
      local hold = string.sub(ARGV[i], 1, 1) == 'p'
      local amount = 0
      local parts = {}
      if hold then
        for tokens, after in string.gmatch(string.sub(ARGV[i], 2), '([^@,]+)@?([^,]*)') do
          parts[#parts + 1] = { cur + math.floor((tonumber(after) or 0) / slot_ms), tonumber(tokens) }
          amount = amount + tonumber(tokens)
        end
      else
        amount = tonumber(ARGV[i])
      end
      -- Everything counted now: enough when it fits. More than the limit fits an empty window only.
      local excess = sum + psum
      if amount <= limit then excess = excess + amount - limit end
      if excess > 1e-6 and hold and amount <= limit and fits_scheduled(parts) then excess = 0 end
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
      if hold then
        for _, part in ipairs(parts) do
          redis.call('HINCRBYFLOAT', key, hold_field(part[1]), part[2])
          if view then view.h[part[1]] = (view.h[part[1]] or 0) + part[2] end
          if part[1] > pmax then pmax = part[1] end
        end
        psum = psum + amount
      else
        count_now(amount)
      end
      granted = granted + 1
    end
  end
elseif op == 'settle' then
  for i = first_arg, #ARGV - 3, 4 do
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
  view = nil
elseif op == 'block' then
  blocked = math.max(blocked, now + math.min(tonumber(ARGV[first_arg]), max_ttl))
end
if math.abs(sum) < 1e-6 then sum = 0 end
if math.abs(psum) < 1e-6 then psum = 0 end
if changed then
  redis.call('HSET', key, 'sum', string.format('%.17g', sum), 'cur', field(cur), 'blocked', field(blocked), 'psum', string.format('%.17g', psum), 'pmax', field(pmax), 'win', string.format('%.17g', window_ms), 'cap', string.format('%.17g', capacity))
  redis.call('PEXPIRE', key, math.ceil(math.min(max_ttl, math.max(3 * window_ms, blocked - now + window_ms, (pmax + live) * slot_ms - now))))
end
local reply = { granted, string.format('%.17g', sum), math.max(0, math.ceil(math.min(wait_ms, max_ttl))), field(cur), fresh, string.format('%.17g', psum), 0, string.format('%.17g', now - cur * slot_ms) }
if leaves ~= nil or op == 'peek' or send_leaving or sum + psum >= limit / 2 then
  leaves = leaving()
  local holds = {}
  for d in pairs(view.h) do holds[#holds + 1] = d end
  table.sort(holds)
  reply[7] = #holds
  for _, d in ipairs(holds) do
    reply[#reply + 1] = math.max(0, math.ceil(d * slot_ms - now))
    reply[#reply + 1] = string.format('%.17g', view.h[d])
  end
  for _, leave in ipairs(leaves) do
    reply[#reply + 1] = math.max(0, math.ceil(leave[1]))
    reply[#reply + 1] = string.format('%.17g', leave[2])
  end
end
return reply
`;
