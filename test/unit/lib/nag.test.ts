import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { type Stack, Validations } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { TidemarkConfig } from '../../../lib/config/config.js';
import { buildStack, MSK_CLUSTER_ARN, testConfig } from './fixtures/stack.js';

/**
 * cdk-nag v3 runs as a CDK policy-validation plugin: any unacknowledged AwsSolutions error or
 * warning makes `synth` throw and writes `validation-report.json`. Returns the report's findings.
 */
function nagFindings(config: TidemarkConfig, addToStack?: (stack: Stack) => void): string[] {
  const outdir = mkdtempSync(path.join(tmpdir(), 'tidemark-nag-'));
  const { app, stack } = buildStack(config, {}, outdir);
  addToStack?.(stack);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  try {
    app.synth();
    return [];
  } catch (err) {
    const report = path.join(outdir, 'validation-report.json');
    if (!existsSync(report)) return [String(err)];
    return [readFileSync(report, 'utf8')];
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

/** Runs `fn` with console output captured, so a finding that is expected does not print into a passing run. */
function quietly<T>(fn: () => T): { value: T; printed: string } {
  const saved = { log: console.log, warn: console.warn, error: console.error, info: console.info };
  const printed: string[] = [];
  const keep = (...args: unknown[]) => {
    printed.push(args.map(String).join(' '));
  };
  Object.assign(console, { log: keep, warn: keep, error: keep, info: keep });
  try {
    return { value: fn(), printed: printed.join('\n') };
  } finally {
    Object.assign(console, saved);
  }
}

describe('cdk-nag AwsSolutions', () => {
  it('finds nothing unacknowledged in the default (Kinesis, AWS-managed encryption) pipeline', () => {
    assert.deepEqual(nagFindings(testConfig()), []);
  });

  it('finds nothing unacknowledged with encryption: kms', () => {
    assert.deepEqual(nagFindings(testConfig({ encryption: 'kms' })), []);
  });

  it('finds nothing unacknowledged with an MSK source', () => {
    assert.deepEqual(nagFindings(testConfig({ source: { type: 'msk', clusterArn: MSK_CLUSTER_ARN, topic: 'shop.cdc' } })), []);
  });

  it('does report a finding that is not acknowledged (the check is live)', () => {
    const { value: findings, printed } = quietly(() => nagFindings(testConfig(), (stack) => new sqs.Queue(stack, 'Unencrypted', { encryption: sqs.QueueEncryption.UNENCRYPTED })));
    assert.match(printed, /AwsSolutions-SQS2/, 'the finding is reported (and kept out of the test log)');
    assert.equal(findings.length, 1);
    assert.match(findings[0]!, /AwsSolutions-SQS/);
  });
});
