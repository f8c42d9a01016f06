/**
 * A CPU profile of one DynamoDB client sending guarded PutItems to the bench's stub server, for
 * digging into goal 6 (`npm run bench` prints only the shares per phase):
 *
 *   node --import tsx test/bench/sdk-profile.ts [default|tidemark] [writes]
 *
 * writes `sdk-<variant>.cpuprofile` to the system's temp directory (open it in Chrome DevTools or
 * VS Code), and prints the shares per phase and the functions with the most self time.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mapLimit } from '../../functions/core/concurrency.js';
import { defaultVariant, type ProfileNode, phaseShares, startStub, tidemarkVariant } from './sdk.js';

const which = process.argv[2] === 'default' ? 'default' : 'tidemark';
const writes = Number(process.argv[3] ?? 4000);
const stub = await startStub();
const m = (which === 'default' ? defaultVariant : tidemarkVariant).make(stub.endpoint);
const ids = Array.from({ length: writes }, (_, i) => i);
const send = (n: number) => mapLimit(ids.slice(0, n), 16, async (i) => void (await m.send(i)));
try {
  await send(Math.min(1000, writes));
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
  const c0 = process.cpuUsage();
  await send(writes);
  const used = process.cpuUsage(c0);
  const { profile } = await session.post('Profiler.stop');
  session.disconnect();
  const file = join(tmpdir(), `sdk-${which}.cpuprofile`);
  writeFileSync(file, JSON.stringify(profile));
  const nodes = profile.nodes as ProfileNode[];
  const samples = profile.samples ?? [];
  console.log(`${which}: ${((used.user + used.system) / writes).toFixed(0)} µs CPU per write while profiled; profile in ${file}`);
  for (const [phase, share] of phaseShares(nodes, samples)) console.log(`  ${(100 * share).toFixed(1).padStart(5)}%  ${phase}`);
  const self = new Map<string, number>();
  const byId = new Map(nodes.map((n) => [n.id, n]));
  for (const id of samples) {
    const f = byId.get(id)?.callFrame;
    if (!f || f.functionName === '(idle)' || f.functionName === '(program)') continue;
    const key = `${f.functionName || '(anonymous)'} ${f.url.replace(/.*node_modules\//, '')}:${(f.lineNumber ?? -1) + 1}`;
    self.set(key, (self.get(key) ?? 0) + 1);
  }
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  console.log('  most self time:');
  for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`  ${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`);
} finally {
  m.close();
  await stub.close();
}
