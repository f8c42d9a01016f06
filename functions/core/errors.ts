/**
 * Errors of tidemark, under one base class. Every error carries enough context (table, key,
 * position; stream, shard, sequence) to be quarantined or logged without the row values themselves.
 */

/** Where an error happened. Keys and positions only: never row values. */
export interface ErrorContext {
  readonly table?: string;
  /** Canonical key text (see keys.ts `keyId`). */
  readonly key?: string;
  /** Encoded position. */
  readonly position?: string;
  readonly stream?: string;
  readonly shard?: string;
  readonly sequence?: string;
}

export class TidemarkError extends Error {
  readonly context: ErrorContext;
  constructor(message: string, options?: ErrorOptions & { context?: ErrorContext }) {
    super(message, options);
    this.name = 'TidemarkError';
    this.context = options?.context ?? {};
  }
}

/** A message that cannot be turned into a normalized event. It is quarantined with `reason`. */
export class DecodeError extends TidemarkError {
  /** A short machine-readable reason code, e.g. `invalid-json`, `unknown-format`, `missing-key`. */
  readonly reason: string;
  constructor(reason: string, message: string, options?: ErrorOptions & { context?: ErrorContext }) {
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
  constructor(message: string, options?: ErrorOptions & { context?: ErrorContext }) {
    super(message, options);
    this.name = 'PositionError';
  }
}

/** A write to current state that failed for a reason other than its guard (table, key, position). */
export class WriteError extends TidemarkError {
  constructor(message: string, options?: ErrorOptions & { context?: ErrorContext }) {
    super(message, options);
    this.name = 'WriteError';
  }
}

/** A batch that cannot complete (raw landing, status, transport): stream, shard and sequence. */
export class BatchError extends TidemarkError {
  constructor(message: string, options?: ErrorOptions & { context?: ErrorContext }) {
    super(message, options);
    this.name = 'BatchError';
  }
}

/** The message of anything thrown, without casting: `catch (err) { log(errorMessage(err)) }`. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return typeof err === 'string' ? err : String(err);
}

/** Anything thrown, as an Error (non-Error throwables are wrapped). */
export function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(errorMessage(err));
}
