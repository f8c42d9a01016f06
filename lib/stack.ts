/**
 * `TidemarkStack`: one pipeline per stack, from the config file named by the context key
 * `tidemark:configFile` (default `tidemark.config.json`, relative to the working directory).
 */
import path from 'node:path';
import { RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { loadConfigFile, type TidemarkConfig } from './config/config.js';
import { suppressJustifiedFindings } from './nag.js';
import { TidemarkPipeline, type TidemarkPipelineProps } from './pipeline.js';

/** Context key naming the config file. */
export const CONFIG_FILE_CONTEXT = 'tidemark:configFile';
/** Context key overriding the ingest handler entry (tests and the offline synth check). */
export const INGEST_ENTRY_CONTEXT = 'tidemark:ingestEntry';
/** Context key: `destroy` lets tables, buckets and logs go with the stack (LocalStack, throwaway dev stacks). */
export const REMOVAL_POLICY_CONTEXT = 'tidemark:removalPolicy';
export const DEFAULT_CONFIG_FILE = 'tidemark.config.json';

export interface TidemarkStackProps extends StackProps {
  /**
   * The validated config.
   * @default - loaded from the file named by the `tidemark:configFile` context
   */
  readonly config?: TidemarkConfig;
  /**
   * Further pipeline props (`stream`, `encryptionKey`, event source overrides, …).
   * @default - none
   */
  readonly pipeline?: Omit<TidemarkPipelineProps, 'config'>;
}

/** Reads the config named by the `tidemark:configFile` context of `scope`. */
export function configFromContext(scope: Construct): TidemarkConfig {
  const file = (scope.node.tryGetContext(CONFIG_FILE_CONTEXT) as string | undefined) ?? DEFAULT_CONFIG_FILE;
  return loadConfigFile(path.resolve(file));
}

export class TidemarkStack extends Stack {
  readonly config: TidemarkConfig;
  readonly pipeline: TidemarkPipeline;

  constructor(scope: Construct, id: string, props: TidemarkStackProps = {}) {
    super(scope, id, { description: 'tidemark: serverless CDC from Kinesis/MSK to S3 raw and DynamoDB current state', ...props });
    this.config = props.config ?? configFromContext(this);
    const ingestEntry = this.node.tryGetContext(INGEST_ENTRY_CONTEXT) as string | undefined;
    const destroy = this.node.tryGetContext(REMOVAL_POLICY_CONTEXT) === 'destroy';
    this.pipeline = new TidemarkPipeline(this, 'Pipeline', {
      ...(ingestEntry ? { ingestEntry: path.resolve(ingestEntry) } : {}),
      ...(destroy ? { removalPolicy: RemovalPolicy.DESTROY } : {}),
      ...props.pipeline,
      config: this.config,
    });
    suppressJustifiedFindings(this.pipeline);
  }
}
