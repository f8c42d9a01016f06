/**
 * Replaces the SDK's instance-metadata region lookup in Lambda bundles only (see
 * `BUNDLE_REPLACEMENTS` in handler-asset.ts). The SDK asks the EC2 instance metadata service for
 * the region only when neither `AWS_REGION` nor a config file names one, and, in the `auto` defaults
 * mode, when `AWS_EXECUTION_ENV` is unset; Lambda always sets both variables, and has no instance
 * metadata service to ask. Reaching it fails loudly instead of timing out on 169.254.169.254.
 */
export const getInstanceMetadataRegion = async (): Promise<never> => {
  throw new Error('Region is missing: the Lambda bundle carries no instance-metadata region lookup (Lambda sets AWS_REGION)');
};
