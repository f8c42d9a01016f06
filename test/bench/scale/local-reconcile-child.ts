/**
 * The measured process of the local full reconcile (local-reconcile.ts): reads its input as JSON on
 * stdin, runs the hours' jobs and the reconciles through the DuckDB engine against the emulator's
 * S3, logs progress on stderr and prints its result as one `SCALE-RESULT {…}` line on stdout.
 */
import { DuckDbEngine } from '../../../bin/local/duckdb-engine.js';
import { createClients, destroyClients } from '../../../bin/local/clients.js';
import { type ChildInput, RESULT_MARK, runJobs, s3Usage } from './local-jobs.js';

const chunks: Buffer[] = [];
for await (const c of process.stdin) chunks.push(c as Buffer);
const input = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ChildInput;
const clients = createClients(input.endpoints);
try {
  const engine = new DuckDbEngine({ s3: clients.s3, ...input.layout, memoryLimit: input.memoryLimit });
  const result = await runJobs(
    engine,
    { hours: input.hours, checkpoints: input.checkpoints, tables: input.tables, findingsRoot: `s3://${input.layout.bucket}/reports/reconcile/`, usage: s3Usage(clients.s3, input.layout.bucket), layout: input.layout },
    (line) => process.stderr.write(`${line}\n`),
  );
  process.stdout.write(`${RESULT_MARK}${JSON.stringify(result)}\n`);
  await engine.close();
} finally {
  destroyClients(clients);
}
