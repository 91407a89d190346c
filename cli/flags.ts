// Commander options built from zod schemas: a flag's default is its schema's default, its
// value is checked by its schema as it is parsed, and --help shows both with the env
// variable. Errors name the flag or the env variable the bad value came from.
// Every flag's env variable follows one rule (envName): QUOTASCOPE_<COMMAND>_<FLAG>. A name
// read before that rule is still read, as a deprecated alias that logs one line naming the
// new name; the new name wins when both are set.
import { type Command, CommanderError, Option } from 'commander';
import type { z } from 'zod';
import { formatPerModel, type PerModel } from '../agent/per-model.ts';
import { optionHelp } from '../instrumentation/limiter-options.ts';
import { optionFlagName } from '../shared/option-flag-name.ts';
import { decimalNumber } from './decimal-number.ts';
import { describeFailure, UsageError } from './errors.ts';

export interface FlagSpec {
  /** The flag without dashes, e.g. `provider-url`. */
  readonly flag: string;
  readonly help: string;
  /** Checks the value (and bounds it); its default, if any, is the flag's default. */
  readonly schema?: z.ZodType;
  /** false: the flag reads no env variable (else envName's). */
  readonly env?: false;
  /** The flag's env variable before the one rule (envName): read when the new one is not set, with a line naming the new one. */
  readonly formerEnv?: string;
  /** Placeholder in --help, e.g. `url` (default `value`). */
  readonly value?: string;
  /** Turns the text into the value the schema checks (default: number, boolean or text, whichever the schema takes). */
  readonly parse?: (text: string) => unknown;
  /** The default as --help shows it, when the schema's default needs words or has none. */
  readonly defaultText?: string | ((value: unknown) => string);
  /** `--flag` alone means `--flag true` (a boolean that still takes true|false from the env variable). */
  readonly switch?: boolean;
}

export type FlagSpecs<K extends string> = Readonly<Record<K, FlagSpec>>;

/** The env variable of a command's flag, the one rule: `agent --max-wait-ms` → QUOTASCOPE_AGENT_MAX_WAIT_MS. */
export function envName(command: string, flag: string): string {
  return `QUOTASCOPE_${command}_${flag}`.toUpperCase().replaceAll('-', '_');
}

/** The HTTP server limits both servers take, with one wording; `formerEnvPrefix` names their env variables before the one rule (PREFIX_HEADERS_TIMEOUT_MS). */
export function serverLimitFlags(
  schemas: Readonly<Record<'headersTimeoutMs' | 'requestTimeoutMs' | 'keepAliveTimeoutMs' | 'maxConnections', z.ZodType>>,
  formerEnvPrefix?: string,
): FlagSpecs<'headersTimeoutMs' | 'requestTimeoutMs' | 'keepAliveTimeoutMs' | 'maxConnections'> {
  const env = (name: string) => (formerEnvPrefix === undefined ? {} : { formerEnv: `${formerEnvPrefix}_${name}` });
  return {
    headersTimeoutMs: { flag: 'headers-timeout-ms', ...env('HEADERS_TIMEOUT_MS'), help: 'longest a client may take to send headers, ms', schema: schemas.headersTimeoutMs, value: 'ms' },
    requestTimeoutMs: { flag: 'request-timeout-ms', ...env('REQUEST_TIMEOUT_MS'), help: 'longest a client may take to send a whole request, ms', schema: schemas.requestTimeoutMs, value: 'ms' },
    keepAliveTimeoutMs: { flag: 'keep-alive-timeout-ms', ...env('KEEP_ALIVE_TIMEOUT_MS'), help: 'idle keep-alive connections close after this, ms', schema: schemas.keepAliveTimeoutMs, value: 'ms' },
    maxConnections: { flag: 'max-connections', ...env('MAX_CONNECTIONS'), help: 'open connections accepted at once', schema: schemas.maxConnections, value: 'n' },
  };
}

/**
 * The flag of an option field that carries its own help (instrumentation/limiter-options.ts):
 * `--key-in-kebab-case`, its help, placeholder and default in words from the field; `spec`
 * adds the env variable (or, where one command means more by it, its own help).
 */
export function optionFlag(key: string, schema: z.ZodType, spec: Partial<FlagSpec> = {}): FlagSpec {
  const help = optionHelp(schema);
  if (!help) throw new Error(`${key}: the schema carries no option help`);
  return { flag: optionFlagName(key), help: help.description, schema, value: help.unit, ...(help.defaultText === undefined ? {} : { defaultText: help.defaultText }), ...spec };
}

/** A per-model flag (N, MODEL=N,… or N,MODEL=N): parsed by parsePerModel, its default shown as one. */
export function perModelFlag(flag: string, help: string, schema: z.ZodType): FlagSpec {
  return { flag, help, schema, value: 'n|model=n,…', parse: parsePerModel, defaultText: (value) => formatPerModel(value as PerModel) };
}

/**
 * A per-model flag value: `N` for every model, `MODEL=N,MODEL=N` per model, or both
 * (`N,MODEL=N`: N for every model not named, as `*=N`). A number alone stays a number.
 */
export function parsePerModel(text: string): number | Record<string, number> {
  const parts = text.split(',').map((part) => part.trim());
  const toNumber = (value: string, what: string) => {
    const n = decimalNumber(value);
    if (!Number.isFinite(n)) throw new Error(`${what}: '${value}' is not a number (give N, or MODEL=N,MODEL=N, or N,MODEL=N)`);
    return n;
  };
  if (parts.length === 1 && !parts[0].includes('=')) return toNumber(parts[0], 'every model');
  const out: Record<string, number> = {};
  for (const part of parts) {
    const eq = part.indexOf('=');
    const [model, value] = eq < 0 ? ['*', part] : [part.slice(0, eq).trim(), part.slice(eq + 1).trim()];
    if (model === '') throw new Error(`'${part}' names no model (give MODEL=N)`);
    if (Object.hasOwn(out, model)) throw new Error(`${model === '*' ? 'every other model' : model} is given twice`);
    out[model] = toNumber(value, model === '*' ? 'every other model' : model);
  }
  return out;
}

interface ZodLike {
  unwrap?: () => ZodLike;
  options?: readonly unknown[];
  def: { type: string };
}

/** The strings an enum takes, looking through default/optional/nullable. */
function choicesOf(schema: z.ZodType | undefined): string[] | undefined {
  let current = schema as unknown as ZodLike | undefined;
  while (current && ['default', 'optional', 'nullable', 'prefault'].includes(current.def.type) && current.unwrap) current = current.unwrap();
  if (current?.def.type !== 'enum' || !current.options) return undefined;
  return current.options.map(String);
}

/** The schema's default: what it gives for a missing value. */
export function schemaDefault(schema: z.ZodType | undefined): unknown {
  if (!schema) return undefined;
  const result = schema.safeParse(undefined);
  return result.success ? result.data : undefined;
}

function defaultText(spec: FlagSpec, value: unknown): string | undefined {
  if (typeof spec.defaultText === 'string') return spec.defaultText;
  if (value === undefined) return undefined;
  if (spec.defaultText) return spec.defaultText(value);
  if (value === null) return 'off';
  if (Array.isArray(value)) return value.join(',');
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** Number, boolean or text: each reading of the text the schema might take, most specific first. */
function readings(text: string): unknown[] {
  const out: unknown[] = [];
  const trimmed = text.trim();
  if (Number.isFinite(decimalNumber(trimmed))) out.push(decimalNumber(trimmed));
  if (/^(true|yes|1)$/i.test(trimmed)) out.push(true);
  if (/^(false|no|0)$/i.test(trimmed)) out.push(false);
  out.push(text);
  return out;
}

/** The first issue of a zod error, with its path inside the value if it has one. */
export function issueText(error: z.ZodError): string {
  const issue = error.issues[0];
  return `${issue.path.length > 0 ? `${issue.path.join('.')}: ` : ''}${issue.message}`;
}

export interface FlagSetOptions {
  /** The env variables before the one rule, of flags without a formerEnv of their own: the prefix, then the flag in capitals (`--max-wait` → PREFIX_MAX_WAIT). */
  readonly formerEnvPrefix?: string;
  /** Where the line about a deprecated env variable goes (default console.warn). */
  readonly warn?: (line: string) => void;
  /** What an error message starts with, given the key and where the value came from (default: the origin). */
  readonly errorPrefix?: (key: string, origin: string) => string;
}

/** The options of one command, made from specs; reads back what was given and from where. */
export class FlagSet<K extends string> {
  readonly #command: Command;
  /** Each key's spec (with its env variable resolved) and commander option. */
  readonly #flags = new Map<K, { readonly spec: FlagSpec; readonly option: Option }>();
  readonly #origin = new Map<K, string>();

  constructor(command: Command, specs: FlagSpecs<K>, options: FlagSetOptions = {}) {
    this.#command = command;
    const warn = options.warn ?? console.warn;
    for (const [key, given] of Object.entries(specs) as [K, FlagSpec][]) {
      const env = given.env === false ? undefined : envName(command.name(), given.flag);
      const formerEnv = given.formerEnv ?? (options.formerEnvPrefix ? `${options.formerEnvPrefix}${given.flag.toUpperCase().replaceAll('-', '_')}` : undefined);
      const spec: FlagSpec = { ...given, ...(formerEnv === undefined || formerEnv === env ? {} : { formerEnv }) };
      const placeholder = spec.switch ? `[${spec.value ?? 'true|false'}]` : `<${spec.value ?? 'value'}>`;
      const choices = choicesOf(spec.schema);
      const fallback = schemaDefault(spec.schema);
      const shown = defaultText(spec, fallback);
      const option = new Option(`--${spec.flag} ${placeholder}`, choices ? `${spec.help} (${choices.join(' | ')})` : spec.help);
      if (fallback !== undefined) option.default(fallback, shown);
      else option.defaultValueDescription = shown; // a default in words only: shown, never set
      if (env) option.env(env);
      if (env && spec.formerEnv) readFormerEnv(option, env, spec.formerEnv);
      if (spec.switch) option.preset('true');
      const flagOrigin = `--${spec.flag}`;
      // Commander emits these just before it parses a value, so the parser knows its source.
      command.on(`option:${option.name()}`, () => this.#origin.set(key, flagOrigin));
      // The line about a former name is said once the value parsed (a bad one is the error's one line).
      let deprecation: string | undefined;
      if (env) {
        command.on(`optionEnv:${option.name()}`, () => {
          const read = option.envVar ?? env;
          this.#origin.set(key, read);
          if (spec.formerEnv && spec.formerEnv in process.env) {
            deprecation =
              read === spec.formerEnv
                ? `[quotascope] ${spec.formerEnv} is deprecated: set ${env} instead`
                : `[quotascope] ${spec.formerEnv} is deprecated and ignored: ${env} is set`;
          }
        });
      }
      option.argParser((text: string) => {
        const origin = this.#origin.get(key) ?? flagOrigin;
        const prefix = options.errorPrefix ? options.errorPrefix(key, origin) : origin;
        const value = this.#parse(spec, text, prefix);
        if (deprecation) warn(deprecation);
        deprecation = undefined;
        return value;
      });
      command.addOption(option);
      this.#flags.set(key, { spec, option });
    }
  }

  #parse(spec: FlagSpec, text: string, prefix: string): unknown {
    let candidates: unknown[];
    try {
      candidates = spec.parse ? [spec.parse(text)] : readings(text);
    } catch (error) {
      throw new UsageError(`${prefix}: ${(error as Error).message}`);
    }
    if (!spec.schema) return candidates[0];
    let firstError: z.ZodError | undefined;
    for (const candidate of candidates) {
      const result = spec.schema.safeParse(candidate);
      if (result.success) return candidate;
      firstError ??= result.error;
    }
    throw new UsageError(`${prefix}: ${issueText(firstError as z.ZodError)} (got ${JSON.stringify(text)})`);
  }

  /** Values given as flags or env variables (defaults left out), as parsed before the schema. */
  given(): Partial<Record<K, unknown>> {
    const out: Partial<Record<K, unknown>> = {};
    for (const [key, { option }] of this.#flags) if (this.isGiven(key)) out[key] = this.#command.getOptionValue(option.attributeName());
    return out;
  }

  /** Every value: given, else the schema's default. */
  values(): Record<K, unknown> {
    const out = {} as Record<K, unknown>;
    for (const [key, { option }] of this.#flags) out[key] = this.#command.getOptionValue(option.attributeName());
    return out;
  }

  isGiven(key: K): boolean {
    const source = this.#command.getOptionValueSource(this.#flag(key).option.attributeName());
    return source === 'cli' || source === 'env';
  }

  /** The flag's name, or the env variable when the value came from there. */
  nameOf(key: K): string {
    return (this.isGiven(key) ? this.#origin.get(key) : undefined) ?? `--${this.#flag(key).spec.flag}`;
  }

  /** Where a value came from: `--flag`, `ENV_VAR`, or both names when it was not given. */
  originOf(key: K): string {
    const given = this.isGiven(key) ? this.#origin.get(key) : undefined;
    if (given) return given;
    const { option, spec } = this.#flag(key);
    return option.envVar ? `--${spec.flag} (${option.envVar})` : `--${spec.flag}`;
  }

  /** One line for a whole-object schema error: the first issue, named by the flag of its first path segment. */
  describe(error: z.ZodError, fallback = '(options)'): string {
    const issue = error.issues[0];
    const key = issue.path[0];
    const name = typeof key === 'string' && this.#flags.has(key as K) ? this.originOf(key as K) : key === undefined ? fallback : String(key);
    return `${name}: ${issue.message}`;
  }

  #flag(key: K): { readonly spec: FlagSpec; readonly option: Option } {
    const flag = this.#flags.get(key);
    if (!flag) throw new Error(`no flag for ${key}`);
    return flag;
  }
}

/**
 * The option reads `formerEnv` when `env` is not set: commander reads `option.envVar` from
 * process.env as it parses (after the flags), so the name is chosen then.
 */
function readFormerEnv(option: Option, env: string, formerEnv: string): void {
  Object.defineProperty(option, 'envVar', {
    get: () => (env in process.env || !(formerEnv in process.env) ? env : formerEnv),
    set: () => {},
    configurable: true,
    enumerable: true,
  });
}

/**
 * Parses argv into a command that has no action (to read its flags back), as if `env` were
 * the environment: commander reads env variables from process.env, so it is swapped for
 * the synchronous parse. Throws UsageError.
 */
export function parseFlags(command: Command, argv: readonly string[], env: NodeJS.ProcessEnv = process.env): void {
  command.exitOverride().configureOutput({ outputError: () => {}, writeOut: () => {}, writeErr: () => {} });
  const saved = process.env;
  process.env = env;
  try {
    command.parse([...argv], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) throw new UsageError(describeFailure(error).line);
    throw error;
  } finally {
    process.env = saved;
  }
}
