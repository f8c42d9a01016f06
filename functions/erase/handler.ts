/**
 * The erase job's Lambda: one function for every step of the erase state machine (lib/replay),
 * the step named in its input. The CLI calls `eraseStep` in-process for local runs.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { createRuntimeClients } from '../adapters/clients.js';
import { loadRuntimeConfig } from '../config/runtime.js';
import { eraseContext } from '../composition.js';
import type { JsonValue } from '../core/json.js';
import { TidemarkError } from '../core/errors.js';
import { type Log, logFromPowertools } from '../telemetry/sinks.js';
import { abandonErase, type BeginOutput, beginErase, type EraseContext, type FindOutput, findEraseObjects, finishErase, rewriteEraseBatch } from './erase.js';

export class UnknownEraseStepError extends TidemarkError {
  constructor(step: unknown) {
    super(`unknown erase step ${JSON.stringify(step)}`);
    this.name = 'UnknownEraseStepError';
  }
}

interface StepInput {
  step?: unknown;
  runId?: string;
  requestKey?: string;
  manifestKey?: string;
  batch?: number;
  begin?: BeginOutput;
  find?: FindOutput;
}

const json = (v: unknown) => JSON.parse(JSON.stringify(v)) as JsonValue;

export async function eraseStep(input: StepInput, ctx: EraseContext): Promise<JsonValue> {
  const runId = input.runId ?? '';
  const requestKey = input.requestKey ?? '';
  switch (input.step) {
    case 'begin':
      return json(await beginErase(ctx, { requestKey }));
    case 'find':
      return json(await findEraseObjects(ctx, { runId, requestKey }));
    case 'rewrite':
      return json(await rewriteEraseBatch(ctx, { runId, requestKey, manifestKey: input.manifestKey ?? '', batch: input.batch ?? -1 }));
    case 'abandon':
      return json(await abandonErase(ctx, { requestKey }));
    case 'finish':
      if (!input.begin || !input.find) throw new UnknownEraseStepError('finish without begin and find results');
      return json(await finishErase(ctx, { runId, requestKey, begin: input.begin, find: input.find }));
    default:
      throw new UnknownEraseStepError(input.step);
  }
}

const log: Log = logFromPowertools(new Logger({ serviceName: 'tidemark-erase' }));
let ctx: EraseContext | undefined;

export async function handler(event: StepInput): Promise<JsonValue> {
  if (!ctx) {
    const config = loadRuntimeConfig();
    ctx = eraseContext(config, createRuntimeClients({ maxAttempts: config.apply.maxRetries + 1 }), log);
  }
  return eraseStep(event, ctx);
}
