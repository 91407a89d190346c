// A run that starts `quotascope agent` or `serve` names its limits with optionFlagName: every
// service option's flag must be that name, or the run would pass a flag the command refuses.
import { describe, expect, it } from 'vitest';
import { SERVICE_FLAGS } from '../../cli/agent.ts';
import { optionFlagName } from '../../shared/option-flag-name.ts';

describe('service flag names', () => {
  it('every service option is its key in kebab case, as a run passes it', () => {
    for (const [key, spec] of Object.entries(SERVICE_FLAGS)) expect(spec.flag, key).toBe(optionFlagName(key));
  });

  it('kebab case splits at each capital', () => {
    expect(optionFlagName('maxWaitMs')).toBe('max-wait-ms');
    expect(optionFlagName('permits')).toBe('permits');
  });
});
