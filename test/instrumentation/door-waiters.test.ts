// The door's leading signal: how long the oldest request waiting at the door has waited,
// from its arrival, until it leaves (admitted, shed or abandoned).
import { describe, expect, it } from 'vitest';
import { DoorWaiters } from '../../instrumentation/admission/door-waiters.ts';

describe('DoorWaiters', () => {
  it('tells the oldest wait of the requests at the door now, and 0 once they left', () => {
    const door = new DoorWaiters();
    expect(door.oldestWaitMs(1_000)).toBe(0);
    const first = door.enter(100);
    const second = door.enter(400);
    expect(door.size).toBe(2);
    expect(door.oldestWaitMs(1_000)).toBe(900);
    first();
    first(); // leaving twice is once
    expect(door.oldestWaitMs(1_000)).toBe(600);
    second();
    expect(door.size).toBe(0);
    expect(door.oldestWaitMs(1_000)).toBe(0);
  });
});
