/**
 * Errors of the pure core. Every error carries enough context (table, key, sequence) to be
 * quarantined or logged without the row values themselves.
 */
export class TidemarkError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'TidemarkError';
  }
}

/** A message that cannot be turned into a normalized event. It is quarantined with `reason`. */
export class DecodeError extends TidemarkError {
  /** A short machine-readable reason code, e.g. `invalid-json`, `unknown-format`, `missing-key`. */
  readonly reason: string;
  constructor(reason: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'DecodeError';
    this.reason = reason;
  }
}

/** The pipeline configuration is invalid; `issues` lists every problem with its path. */
export class ConfigError extends TidemarkError {
  readonly issues: readonly string[];
  constructor(issues: readonly string[], source = 'config') {
    super(`${source} is invalid:\n  - ${issues.join('\n  - ')}`);
    this.name = 'ConfigError';
    this.issues = issues;
  }
}

export class PositionError extends TidemarkError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'PositionError';
  }
}
