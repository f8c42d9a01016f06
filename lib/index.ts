/**
 * tidemark as a construct library:
 *
 *   import { loadConfigFile, TidemarkPipeline } from 'tidemark';
 *   new TidemarkPipeline(stack, 'Cdc', { config: loadConfigFile('tidemark.config.json') });
 *
 * The ingest handler ships prebuilt in the package (`dist/handlers/ingest/`), so the construct needs
 * neither esbuild nor the TypeScript sources; `aws-cdk-lib` and `constructs` are peer dependencies.
 */
export {
  bucketNameProblems,
  type ConfigInput,
  ConfigSchema,
  configFromEnv,
  type FormatSetting,
  KAFKA_TOMBSTONES,
  type KafkaTombstones,
  type KinesisSourceConfig,
  loadConfigFile,
  type MskSourceConfig,
  ON_FAILURE_PREFIX,
  parseConfig,
  type SourceConfig,
  type TableConfig,
  tableBySource,
  type TidemarkConfig,
} from './config/config.js';
export { ConfigError, TidemarkError } from '../functions/core/errors.js';
export { CurrentState, type CurrentStateProps, EXPIRES_AT_ATTRIBUTE } from './current-state.js';
export {
  DEFAULT_BUNDLING,
  defaultKafkaMappingProps,
  defaultKinesisMappingProps,
  INLINE_RESOURCE_LIMIT,
  METRIC_NAMESPACE,
  overrideProps,
  RESOURCES_PER_NESTED_STACK,
  SERVICE_NAME,
} from './defaults.js';
export { allowServiceUse, createPipelineKey } from './encryption.js';
export { BUNDLE_FILE, type HandlerCode, type HandlerCodeProps, handlerCode } from './handler-asset.js';
export { History, type HistoryProps, ICEBERG_TABLES, JSON_TABLES, RAW_COLUMNS, RAW_PARTITION_KEYS, RAW_V1_COLUMNS, RAW_V1_PARTITION_KEYS } from './history.js';
export { IngestFunction, type IngestFunctionProps, KEY_ACTIONS, STATUS_TABLE_ACTIONS, TARGET_TABLE_ACTIONS } from './ingest-function.js';
export type { MetricName as TidemarkMetricName } from '../functions/telemetry/contract.js';
export { type MetricFactoryProps, TidemarkMetricFactory } from './metrics.js';
export { Monitoring, type MonitoringProps } from './monitoring.js';
export { suppressJustifiedFindings } from './nag.js';
export { S3OnFailure } from './on-failure.js';
export { deploymentIssues, type MappingOverrides, tablesWithoutTopic, TidemarkPipeline, type TidemarkPipelineProps } from './pipeline.js';
export { RawStore, type RawStoreProps } from './raw-store.js';
export { CONFIG_FILE_CONTEXT, configFromContext, TidemarkStack, type TidemarkStackProps } from './stack.js';
