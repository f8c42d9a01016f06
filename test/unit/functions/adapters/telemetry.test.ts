/** Metric sinks and the Powertools log adapter: contract names only, per table and rolled up per pipeline. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Logger } from '@aws-lambda-powertools/logger';
import { CollectingMetricSink, logFromPowertools, PowertoolsMetricSink } from '../../../../functions/telemetry/sinks.js';

/** Runs `fn` with stdout and stderr captured in order (Powertools writes EMF and logs there). */
function captureStdout(fn: () => void): string[] {
  const lines: string[] = [];
  const streams = [process.stdout, process.stderr];
  const writes = streams.map((s) => s.write.bind(s));
  for (const s of streams) {
    s.write = ((chunk: string | Uint8Array) => {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      return true;
    }) as typeof s.write;
  }
  try {
    fn();
  } finally {
    streams.forEach((s, i) => {
      s.write = writes[i] as typeof s.write;
    });
  }
  return lines;
}

describe('telemetry', () => {
  it('emits every value per table and once more at pipeline level (EMF)', () => {
    const sink = new PowertoolsMetricSink('shop');
    const lines = captureStdout(() => {
      sink.add('public.orders', 'EventsApplied', 'Count', 2);
      sink.add('public.lines', 'EventsApplied', 'Count', 3);
      sink.flush();
    });
    const blobs = lines.map((l) => JSON.parse(l) as Record<string, unknown> & { _aws: { CloudWatchMetrics: { Namespace: string; Dimensions: string[][] }[] } });
    const byScope = new Map(blobs.map((b) => [String(b.table ?? '(pipeline)'), b]));
    assert.deepEqual([...byScope.keys()].sort(), ['(pipeline)', 'public.lines', 'public.orders']);
    assert.deepEqual(byScope.get('public.orders')?.EventsApplied, 2);
    assert.deepEqual(byScope.get('(pipeline)')?.EventsApplied, [2, 3], 'the roll-up holds every value; CloudWatch sums them');
    for (const b of blobs) {
      assert.equal(b._aws.CloudWatchMetrics[0]?.Namespace, 'Tidemark');
      assert.equal(b.service, 'tidemark-ingest');
      assert.equal(b.pipeline, 'shop');
    }
  });

  it('collects totals and lag samples in memory', () => {
    const sink = new CollectingMetricSink();
    sink.add('t', 'EventsApplied', 'Count', 2);
    sink.add('t', 'EventsApplied', 'Count', 1);
    sink.add('t', 'FreshnessLagMs', 'Milliseconds', 40);
    assert.equal(sink.totals.get('t:EventsApplied'), 3);
    assert.deepEqual(sink.samples.get('t:FreshnessLagMs'), [40]);
  });

  it('adapts a Powertools logger to Log, with structured extras', () => {
    const log = logFromPowertools(new Logger({ serviceName: 'test', logLevel: 'DEBUG' }));
    const lines = captureStdout(() => {
      log.debug('d');
      log.info('i', { table: 't' });
      log.warn('w');
      log.error('e', { shard: 's' });
    });
    const parsed = lines.map((l) => JSON.parse(l) as { level: string; message: string; table?: string; shard?: string });
    assert.deepEqual(
      parsed.map((p) => [p.level, p.message]),
      [
        ['DEBUG', 'd'],
        ['INFO', 'i'],
        ['WARN', 'w'],
        ['ERROR', 'e'],
      ],
    );
    assert.equal(parsed[1]?.table, 't');
    assert.equal(parsed[3]?.shard, 's');
  });
});
