// The review tree's reviewers: the branches that run in parallel before the synthesizer.
export const REVIEWERS = [
  { name: 'correctness', focus: 'logic errors, wrong results and unhandled edge cases' },
  { name: 'security', focus: 'injection, secrets, unsafe input handling and auth gaps' },
  { name: 'style', focus: 'naming, structure, readability and consistency' },
  { name: 'tests', focus: 'missing or weak tests and untested branches' },
] as const;
