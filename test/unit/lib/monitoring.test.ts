/**
 * The telemetry contract is closed: every metric the runtime can emit is read by an alarm or the
 * dashboard, and everything they read is emitted. And alarms scale: 500 tables synthesize with the
 * same alarms as three, and the dashboard stays the same size.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { parseConfig, type TidemarkConfig } from '../../../lib/config/config.js';
import { METRIC_NAMES, METRICS_NAMESPACE } from '../../../functions/telemetry/contract.js';
import { TidemarkMetricFactory } from '../../../lib/metrics.js';
import { Monitoring } from '../../../lib/monitoring.js';

function configWith(tables: number): TidemarkConfig {
  return parseConfig({
    name: 'wide',
    tables: Array.from({ length: tables }, (_, i) => ({ source: `public.t${i}`, target: `wide-t${i}`, key: ['id'] })),
    raw: { bucket: 'wide-raw' },
  });
}

function monitoringTemplate(config: TidemarkConfig, sourceKind: 'kinesis' | 'msk' = 'kinesis'): Template {
  const stack = new Stack(new App({ analyticsReporting: false }), 'Monitoring', { env: { account: '111122223333', region: 'us-east-1' } });
  const fn = new lambda.Function(stack, 'Fn', { runtime: lambda.Runtime.NODEJS_22_X, handler: 'index.handler', code: lambda.Code.fromInline('exports.handler = async () => ({})') });
  const queue = new sqs.Queue(stack, 'Dlq');
  new Monitoring(stack, 'Monitoring', { config, metrics: new TidemarkMetricFactory({ pipeline: config.name }), function: fn, deadLetterQueue: queue, sourceKind });
  return Template.fromStack(stack);
}

/** The dashboard body with CloudFormation tokens (region, function name) replaced by a placeholder. */
function dashboardBody(template: Template): { widgets: { properties: { metrics?: unknown[][] } }[] } {
  const dashboards = Object.values(template.findResources('AWS::CloudWatch::Dashboard'));
  assert.equal(dashboards.length, 1);
  const body = dashboards[0]?.Properties.DashboardBody as { 'Fn::Join': [string, unknown[]] };
  return JSON.parse(body['Fn::Join'][1].map((p) => (typeof p === 'string' ? p : 'TOKEN')).join(''));
}

/** Tidemark metric names read by the dashboard (plain metrics and SEARCH expressions) and by alarms. */
function consumedMetrics(template: Template): { dashboard: Set<string>; alarms: Set<string> } {
  const dashboard = new Set<string>();
  for (const w of dashboardBody(template).widgets) {
    for (const m of w.properties.metrics ?? []) {
      if (m[0] === METRICS_NAMESPACE && typeof m[1] === 'string') dashboard.add(m[1]);
      const expression = (m[0] as { expression?: string } | undefined)?.expression ?? '';
      for (const match of expression.matchAll(/\{Tidemark,[^}]*\} MetricName="([A-Za-z]+)"/g)) if (match[1]) dashboard.add(match[1]);
    }
  }
  const alarms = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(visit);
    else if (node && typeof node === 'object') {
      const o = node as Record<string, unknown>;
      if (o.Namespace === METRICS_NAMESPACE && typeof o.MetricName === 'string') alarms.add(o.MetricName);
      Object.values(o).forEach(visit);
    }
  };
  visit(template.findResources('AWS::CloudWatch::Alarm'));
  return { dashboard, alarms };
}

describe('telemetry contract and monitoring', () => {
  it('every emitted metric is read by the dashboard or an alarm, and every metric they read is emitted', () => {
    const { dashboard, alarms } = consumedMetrics(monitoringTemplate(configWith(3)));
    const consumed = new Set([...dashboard, ...alarms]);
    const emitted = new Set<string>(METRIC_NAMES);
    assert.deepEqual([...emitted].filter((n) => !consumed.has(n)), [], 'emitted but never read');
    assert.deepEqual([...consumed].filter((n) => !emitted.has(n)), [], 'read but never emitted');
    // Alarms read the signals of a stall and of wrong data.
    for (const name of ['EventsReceived', 'EventsFailed', 'Quarantined', 'Conflicts', 'FreshnessLagMs', 'EventsStale', 'EventsApplied']) assert.ok(alarms.has(name), name);
  });

  it('synthesizes 500 tables with the alarms and dashboard of three: no per-table metric, no math over 10 metrics', () => {
    const small = monitoringTemplate(configWith(3));
    const wide = monitoringTemplate(configWith(500));
    const alarmCount = (t: Template) => Object.keys(t.findResources('AWS::CloudWatch::Alarm')).length;
    assert.equal(alarmCount(wide), alarmCount(small));
    for (const [id, alarm] of Object.entries(wide.findResources('AWS::CloudWatch::Alarm'))) {
      const metrics = (alarm.Properties.Metrics as unknown[] | undefined) ?? [];
      assert.ok(metrics.length <= 10, `${id}: ${metrics.length} metrics`);
    }
    const size = (t: Template) => JSON.stringify(dashboardBody(t)).length;
    assert.equal(size(wide), size(small) + 2, 'only the table count in the header differs');
    assert.ok(size(wide) < 100_000);
  });

  it('watches the offset lag instead of the iterator age for MSK', () => {
    const { alarms } = consumedMetrics(monitoringTemplate(configWith(2), 'msk'));
    assert.ok(alarms.has('EventsReceived'));
    const t = monitoringTemplate(configWith(2), 'msk');
    t.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'OffsetLag' });
    assert.equal(Object.keys(t.findResources('AWS::CloudWatch::Alarm', { Properties: { MetricName: 'IteratorAge' } })).length, 0);
  });

  it('alarms on schema drift only when asked: changes the target cannot hold, or every change', () => {
    const withDrift = (schemaDrift: 'off' | 'incompatible' | 'any') => monitoringTemplate(parseConfig({ ...configWith(2), alarms: { schemaDrift } }));
    const driftAlarms = (t: Template) =>
      Object.values(t.findResources('AWS::CloudWatch::Alarm')).flatMap((a) => (['SchemaIncompatibleChanges', 'SchemaChanges'].includes(String(a.Properties.MetricName)) ? [a.Properties] : []));
    assert.deepEqual(driftAlarms(monitoringTemplate(configWith(2))), [], 'off by default');
    assert.deepEqual(driftAlarms(withDrift('off')), []);
    const incompatible = driftAlarms(withDrift('incompatible'));
    assert.deepEqual(
      incompatible.map((p) => [p.MetricName, p.Threshold, p.ComparisonOperator]),
      [['SchemaIncompatibleChanges', 0, 'GreaterThanThreshold']],
    );
    assert.deepEqual(
      driftAlarms(withDrift('any')).map((p) => p.MetricName),
      ['SchemaChanges'],
    );
    assert.throws(() => parseConfig({ ...configWith(2), alarms: { schemaDrift: 'sometimes' } }), /schemaDrift/);
  });
});
