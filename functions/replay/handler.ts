/**
 * The replay job's Lambda: one function for every step of the state machine (lib/replay), the step
 * named in its input by the definition's Parameters. The CLI calls `replayStep` in-process when it
 * runs the same definition locally.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { createRuntimeClients } from '../adapters/clients.js';
import { loadRuntimeConfig } from '../config/runtime.js';
import type { JsonValue } from '../core/json.js';
import { TidemarkError } from '../core/errors.js';
import { type Log, logFromPowertools } from '../telemetry/sinks.js';
import { type JobContext, type ReplayRequest, summarizeReplay, verifyFresh } from './job.js';
import { ledgerKeyRef, replayContext } from '../composition.js';
import { listReplayBuckets, planReplaySql, replayBucket } from './sql-job.js';

export class UnknownStepError extends TidemarkError {
  constructor(step: unknown) {
    super(`unknown step ${JSON.stringify(step)}`);
    this.name = 'UnknownStepError';
  }
}

type StepInput = { step?: unknown; request?: ReplayRequest; manifestKey?: string; bucket?: number };

/** Runs one step of the replay state machine. */
export async function replayStep(input: StepInput, ctx: JobContext): Promise<JsonValue> {
  const manifestKey = input.manifestKey ?? '';
  switch (input.step) {
    case 'plan-sql':
      if (!input.request) throw new UnknownStepError('plan-sql without a request');
      return JSON.parse(JSON.stringify(await planReplaySql(ctx, input.request))) as JsonValue;
    case 'buckets':
      return JSON.parse(JSON.stringify(await listReplayBuckets(ctx, { manifestKey }))) as JsonValue;
    case 'bucket': {
      const { result: _result, ...out } = await replayBucket(ctx, { manifestKey, bucket: input.bucket ?? -1 });
      return JSON.parse(JSON.stringify(out)) as JsonValue;
    }
    case 'summarize':
      return JSON.parse(JSON.stringify(await summarizeReplay(ctx, { manifestKey }))) as JsonValue;
    case 'verify':
      return JSON.parse(JSON.stringify(await verifyFresh(ctx, { manifestKey }))) as JsonValue;
    default:
      throw new UnknownStepError(input.step);
  }
}

export const lambdaLog: Log = logFromPowertools(new Logger({ serviceName: 'tidemark-replay' }));
let ctx: JobContext | undefined;

export async function handler(event: StepInput): Promise<JsonValue> {
  if (!ctx) {
    const config = loadRuntimeConfig();
    ctx = replayContext(config, createRuntimeClients({ maxAttempts: config.apply.maxRetries + 1 }), lambdaLog, process.env, await ledgerKeyRef(config, lambdaLog));
  }
  return replayStep(event, ctx);
}
