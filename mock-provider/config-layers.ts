// The mock's configuration from layers, later ones winning: the defaults, then a config file
// (YAML or JSON), then the environment, then flags. Each layer is a partial config; a value
// can be fine alone and wrong with the others (probabilities summing past 1), so an error
// names what in its layer set the fields it is about (a flag, a variable), else the layer.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { ConfigError, defaultConfig, type MockConfig, mergeConfig } from './config.ts';

export interface ConfigLayer {
  /** What the layer is, for errors: "config file mock.yaml", "environment", "flags". */
  readonly name: string;
  /** A partial config, validated when merged. */
  readonly patch: unknown;
  /** The name each dotted config path of the patch was given under (a flag, a variable). */
  readonly setBy?: ReadonlyMap<string, string>;
}

/** A config file that cannot be read or parsed; the message names the file. */
export class ConfigFileError extends Error {
  override name = 'ConfigFileError';
}

/** The partial config in a YAML or JSON file (JSON when the name ends in .json). */
export function readConfigFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigFileError(`cannot read ${path}: ${(error as Error).message}`);
  }
  try {
    return path.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new ConfigFileError(`${path} is not valid ${path.endsWith('.json') ? 'JSON' : 'YAML'}: ${(error as Error).message.split('\n')[0]}`);
  }
}

/** A layer from settings by dotted config path ('faults.stallMs'), each with the name it was given under. */
export function settingsLayer(name: string, settings: Iterable<readonly [path: string, value: unknown, setBy: string]>): ConfigLayer {
  const patch: Record<string, unknown> = {};
  const setBy = new Map<string, string>();
  for (const [path, value, given] of settings) {
    const [head, tail] = path.split('.');
    if (tail === undefined) patch[head] = value;
    else patch[head] = { ...((patch[head] as Record<string, unknown> | undefined) ?? {}), [tail]: value };
    setBy.set(path, given);
  }
  return { name, patch, setBy };
}

/** Who in `layer` set any of `fields` (dotted config paths), else the layer's name. */
function sourcesOf(layer: ConfigLayer, fields: readonly string[]): string {
  const related = (a: string, b: string) => a === b || a.startsWith(`${b}.`) || b.startsWith(`${a}.`);
  const names = [...(layer.setBy ?? [])].filter(([path]) => fields.some((field) => related(path, field))).map(([, name]) => name);
  return names.length > 0 ? names.join(', ') : layer.name;
}

/** `base` with each layer merged over it in turn (throws ConfigError naming the source). */
export function layerConfig(layers: readonly ConfigLayer[], base: MockConfig = defaultConfig): MockConfig {
  let merged = base;
  for (const layer of layers) {
    try {
      merged = mergeConfig(merged, layer.patch ?? {});
    } catch (error) {
      if (error instanceof ConfigError) throw new ConfigError(`${sourcesOf(layer, error.fields)}: ${error.message}`, error.fields);
      throw error;
    }
  }
  return merged;
}
