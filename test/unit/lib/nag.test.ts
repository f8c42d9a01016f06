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
    const findings = nagFindings(testConfig(), (stack) => new sqs.Queue(stack, 'Unencrypted', { encryption: sqs.QueueEncryption.UNENCRYPTED }));
    assert.equal(findings.length, 1);
    assert.match(findings[0]!, /AwsSolutions-SQS/);
  });
});
