// Compressing or stretching a scenario in time and load, keeping its shape.
import { scaleArrival } from './arrivals.ts';
import { ScenarioError } from './schema.ts';
import type { ScenarioFile } from './types.ts';

export interface Scaling {
  /** Multiplies every time (offsets, durations, trace times); rates divide by it. */
  time?: number;
  /** Multiplies users and rates (at least 1 user per burst). */
  load?: number;
}

/** Compresses or stretches a scenario in time and load, keeping its shape. */
export function scaleScenario(s: ScenarioFile, { time = 1, load = 1 }: Scaling): ScenarioFile {
  if (!(time > 0) || !(load > 0)) throw new ScenarioError('scale', time > 0 ? 'load' : 'time', 'must be > 0');
  const t = (x: number) => x * time;
  const scaler = { time: t, rate: (r: number) => (r * load) / time, users: (u: number) => Math.max(1, Math.round(u * load)) };
  return {
    ...s,
    arrivals: s.arrivals.map((a) => scaleArrival(a, scaler)),
    mock: s.mock && { ...s.mock, timeline: s.mock.timeline?.map((c) => ({ ...c, at: t(c.at) })) },
  };
}
