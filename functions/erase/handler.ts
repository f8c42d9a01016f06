/**
 * The erase job's Lambda: one function for every step of the erase state machine (lib/replay),
 * the step named in its input, and the fetch of its query loops (`${JobQueryAtFunction}`: an input
 * with `queriesKey` and no step). The CLI calls `eraseStep` in-process for local runs.
 *
 * What a step returns goes into the state machine's state: counts, S3 keys and the run's tables,
 * never a key. The per-key results are in the run's summary object (`summaryKey`).
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { createRuntimeClients } from '../adapters/clients.js';
import { runFile } from '../adapters/raw-layout.js';
import { loadRuntimeConfig } from '../config/runtime.js';
import { eraseContext } from '../composition.js';
import type { JsonValue } from '../core/json.js';
import { TidemarkError } from '../core/errors.js';
import { type Log, logFromPowertools } from '../telemetry/sinks.js';
import { abandonErase, beginErase, type EraseContext, erasePrefix, finishErase, rewriteEraseBatch } from './erase.js';
import { eraseQueryAt, listEraseObjects } from './find.js';

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
  batch?: number;
  objects?: string[];
  /** Finish: how many objects the query named. */
  found?: number;
  /** The query loop's fetch. */
  queriesKey?: string;
  index?: number;
  count?: number;
}

const json = (v: unknown) => JSON.parse(JSON.stringify(v)) as JsonValue;

export async function eraseStep(input: StepInput, ctx: EraseContext): Promise<JsonValue> {
  const runId = input.runId ?? '';
  const requestKey = input.requestKey ?? '';
  if (input.step === undefined && typeof input.queriesKey === 'string') return json(await eraseQueryAt(ctx, { queriesKey: input.queriesKey, index: input.index ?? 0, count: input.count ?? 0 }));
  switch (input.step) {
    case 'begin':
      return json(await beginErase(ctx, { runId, requestKey }));
    case 'objects':
      return json(await listEraseObjects(ctx, { runId }));
    case 'rewrite': {
      const { byRequest: _by, ...out } = await rewriteEraseBatch(ctx, { runId, requestKey, batch: input.batch ?? -1, objects: input.objects ?? [] });
      return json(out);
    }
    case 'abandon':
      return json(await abandonErase(ctx, { runId, requestKey }));
    case 'finish': {
      // The per-key results stay in S3: a run of many keys would not fit the state.
      const { results: _results, ...summary } = await finishErase(ctx, { runId, requestKey, ...(typeof input.found === 'number' ? { objects: input.found } : {}) });
      return json({ ...summary, summaryKey: runFile(erasePrefix(ctx.config, runId), 'summary') });
    }
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
