// A setting that is one number for every model, or one per model: `{ "gemini-2.5-pro": 450000,
// "*": 900000 }` (a model not named takes `*`, else the setting's default). Provider quotas
// are per model (Gemini counts them per project and per model), so every budget that mirrors
// one can be given per model; the planner reads the same values.
import { z } from 'zod';

/** The key of the value for every model not named. */
export const EVERY_OTHER_MODEL = '*';

export type PerModel = number | Readonly<Record<string, number>>;

const modelKey = z
  .string()
  .max(200)
  .regex(/^(\*|[A-Za-z0-9][\w.:/-]*)$/, 'a model name (letters, digits, . _ - : /) or * for every other model');

/** A per-model setting of `each`'s bounds (required when there is no fallback); an error names the model whose value is wrong. */
export function perModelSchema(each: z.ZodNumber, fallback: number): z.ZodDefault<z.ZodType<PerModel>>;
export function perModelSchema(each: z.ZodNumber): z.ZodType<PerModel>;
export function perModelSchema(each: z.ZodNumber, fallback?: number): z.ZodType<PerModel> {
  const perModel = z
    .record(modelKey, each)
    .refine((r) => Object.keys(r).length >= 1 && Object.keys(r).length <= 1000, 'name 1 to 1000 models');
  const schema = z.custom<PerModel>(() => true).superRefine((value, ctx) => {
    const result = (typeof value === 'object' && value !== null ? perModel : each).safeParse(value);
    for (const issue of result.error?.issues ?? []) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
  });
  return fallback === undefined ? schema : schema.default(fallback);
}

/** The value for `model`: its own, else `*`, else `fallback`. */
export function valueForModel(value: PerModel, model: string, fallback: number): number {
  if (typeof value === 'number') return value;
  return value[model] ?? value[EVERY_OTHER_MODEL] ?? fallback;
}

/** `value` with every number passed through `f` (e.g. a quota to its budget). */
export function mapPerModel(value: PerModel, f: (n: number) => number): PerModel {
  return typeof value === 'number' ? f(value) : Object.fromEntries(Object.entries(value).map(([model, n]) => [model, f(n)]));
}

/** Whether a value names models (rather than one number for all). */
export const isPerModel = (value: PerModel): value is Readonly<Record<string, number>> => typeof value !== 'number';

/** The value as flag text: `N`, or `MODEL=N,…` with `*` written as a bare `N` (what the CLI's parsePerModel reads). */
export function formatPerModel(value: PerModel): string {
  if (typeof value === 'number') return String(value);
  return Object.entries(value)
    .map(([model, n]) => (model === EVERY_OTHER_MODEL ? String(n) : `${model}=${n}`))
    .join(',');
}
