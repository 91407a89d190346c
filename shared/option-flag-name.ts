// The command-line flag of a service option: its key in kebab case (`maxWaitMs` →
// `max-wait-ms`), as `quotascope agent` and `serve` name every option they take; a run that
// starts them passes its limits under these names.

/** `maxWaitMs` → `max-wait-ms`. */
export const optionFlagName = (key: string): string => key.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);
