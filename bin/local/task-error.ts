/**
 * A local Task's failure, named as Step Functions names it on AWS, so the definition's `Retry` and
 * `Catch` match it the same way here. The engine (aws-local-stepfunctions) takes a thrown error's
 * `name` as the ASL `Error` and its `message` as the `Cause`, so `name` is the ASL error name here,
 * not the class name:
 *
 *   throw new LocalTaskError('States.TaskFailed', JSON.stringify({ QueryExecution: … }))
 *   throw new LocalTaskError('DynamoDb.ExportNotFoundException', 'no export arn:…')   // ServiceName.ErrorName, as AWS SDK integrations do
 *
 * `States.Runtime` is neither retried nor caught, as on AWS ("A retry or catch on States.ALL won't
 * catch States.Runtime errors", Step Functions error handling): the engine reads `isRetryable` and
 * `isCatchable` off the error, and the execution fails with it.
 */
import { TidemarkError } from '../../functions/core/errors.js';

export class LocalTaskError extends TidemarkError {
  /** The ASL error name, also `name`. */
  readonly error: string;
  constructor(error: string, cause: string, options?: ErrorOptions) {
    super(cause, options);
    this.name = error;
    this.error = error;
  }
  /** Read by the engine before matching a Retry (absent there means retryable). */
  get isRetryable(): boolean {
    return this.error !== STATES_RUNTIME;
  }
  /** Read by the engine before matching a Catch. */
  get isCatchable(): boolean {
    return this.error !== STATES_RUNTIME;
  }
}

/** A value the local runner cannot run (a format, a mode), found only at run time: never retried into success. */
export const LOCAL_UNSUPPORTED = 'Tidemark.LocalUnsupported';

/** An ill-formed task input (a missing field, a wrong type), as Step Functions reports an unusable input. */
export const STATES_RUNTIME = 'States.Runtime';

export const unsupported = (message: string): LocalTaskError => new LocalTaskError(LOCAL_UNSUPPORTED, message);
export const invalidInput = (message: string): LocalTaskError => new LocalTaskError(STATES_RUNTIME, message);
