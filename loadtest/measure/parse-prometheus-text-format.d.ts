// Types of parse-prometheus-text-format (the package ships none), for what we read of it.
declare module 'parse-prometheus-text-format' {
  interface ParsedSample {
    value?: string;
    labels?: Record<string, string>;
  }
  interface ParsedFamily {
    name: string;
    help: string;
    type: string;
    metrics: ParsedSample[];
  }
  export default function parsePrometheusText(text: string): ParsedFamily[];
}
