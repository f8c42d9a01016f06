/**
 * The failure of a state machine run in this process (bin/local/stepfunctions.ts), kept apart from
 * the engine so that code which only needs to recognize it (the ledger-key hint) does not load
 * aws-local-stepfunctions, a dev dependency:
 *
 *   err instanceof LocalStateMachineError && err.error === 'EraseSecretError'
 */
import { TidemarkError } from '../../functions/core/errors.js';

export class LocalStateMachineError extends TidemarkError {
  /** The ASL error name (`States.TaskFailed`, a Fail state's `Error`, …), when the execution failed. */
  readonly error: string | undefined;
  constructor(message: string, error?: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'LocalStateMachineError';
    this.error = error;
  }
}
