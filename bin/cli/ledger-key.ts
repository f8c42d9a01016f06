/**
 * The erase ledger key missing or unreadable in a CLI run (erase, replay), with where to get it.
 */
import type { TidemarkConfig } from '../../lib/config/config.js';
import { ledgerKeySecretName } from '../../lib/config/replay.js';
import { asError, errorMessage } from '../../functions/core/errors.js';
import { EraseSecretError } from '../../functions/adapters/erase-ledger.js';
import { LocalStateMachineError } from '../local/state-machine-error.js';

/**
 * The missing ledger key error, with where to get the key: with an `env:` reference, the deployed
 * stack keeps the key in the secret it generated, and a local run must hash with that same key.
 */
export function ledgerKeyHint(cfg: TidemarkConfig, err: unknown): Error {
  const reference = cfg.replay.erase.ledgerKeySecret;
  if (!reference.startsWith('env:')) return asError(err);
  const variable = reference.slice('env:'.length);
  return new EraseSecretError(
    `${errorMessage(err)}\n  For the ledger of a deployed stack, export the key that stack generated (this needs secretsmanager:GetSecretValue on it):\n` +
      `  export ${variable}="$(aws secretsmanager get-secret-value --secret-id ${ledgerKeySecretName(cfg.name)} --query SecretString --output text)"\n` +
      '  For a pipeline that only runs locally, any value of at least 16 bytes, kept for as long as its ledger.',
  );
}

/** True for the ledger key failing to load, directly or as the local state machine's task failure. */
function isLedgerKeyError(err: unknown): boolean {
  return err instanceof EraseSecretError || (err instanceof LocalStateMachineError && err.error === 'EraseSecretError');
}

/** `err` with the ledger key hint when it is the key failing to load; otherwise `err` itself. */
export function withLedgerKeyHint(cfg: TidemarkConfig, err: unknown): unknown {
  return isLedgerKeyError(err) ? ledgerKeyHint(cfg, err) : err;
}
