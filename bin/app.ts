/**
 * The CDK app: one `TidemarkStack` named after the pipeline, checked with cdk-nag's AwsSolutions pack.
 *
 *   npx cdk deploy -c tidemark:configFile=path/to/tidemark.config.json
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { configFromContext, TidemarkStack } from '../lib/stack.js';

const app = new App();
const config = configFromContext(app);
const account = process.env.CDK_DEFAULT_ACCOUNT;
const region = process.env.CDK_DEFAULT_REGION;

new TidemarkStack(app, `Tidemark-${config.name}`, {
  config,
  ...(account || region ? { env: { ...(account ? { account } : {}), ...(region ? { region } : {}) } } : {}),
});
// cdk-nag v3 runs as a CDK policy-validation plugin: any unacknowledged finding fails the synth.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
app.synth();
