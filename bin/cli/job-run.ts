/**
 * What the job commands share: a progress display over a local state-machine run (tasks done, the
 * rate, the state it is in), and `--on aws`: find the deployed state machine by name, start an
 * execution and wait for its output.
 *
 *   const p = jobProgress('reconcile', quiet);   runLocalStateMachine(def, input, { handlers, onProgress: p.onEvent }); p.stop();
 *   const output = await runOnAws(sfnClient(), await stateMachineArnByName(sfnClient(), 'shop-reconcile'), runId, input);
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { DescribeExecutionCommand, ListStateMachinesCommand, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { annotateErrors } from '../local/call-context.js';
import type { LocalProgressEvent } from '../local/stepfunctions.js';
import { CliError } from './errors.js';
import { err, progress } from './output.js';

/** A Step Functions client whose errors name the operation and state machine. */
export const sfnClient = (): SFNClient => annotateErrors(new SFNClient({}), 'SFN', undefined);

/** Progress over a local run: map iterations and tasks done, with the rate and the current state. */
export function jobProgress(label: string, quiet: boolean): { onEvent: (e: LocalProgressEvent) => void; stop: () => void } {
  const bar = progress(label, null, 'tasks', { quiet });
  let done = 0;
  let state = '';
  return {
    onEvent: (e) => {
      if (e.type === 'StateEntered' && e.state && e.index === undefined) state = e.state;
      if (e.type === 'MapIterationSucceeded' || e.type === 'MapIterationFailed' || (e.type === 'StateExited' && e.index === undefined)) done++;
      if (e.type === 'StateRetried') state = `${e.state ?? '?'} retrying after ${e.error ?? 'an error'}`;
      bar.update(done, state);
    },
    stop: () => bar.stop(),
  };
}

/** Finds a deployed state machine by name. */
export async function stateMachineArnByName(sfn: SFNClient, name: string): Promise<string> {
  let token: string | undefined;
  do {
    const page = await sfn.send(new ListStateMachinesCommand({ nextToken: token }));
    const hit = page.stateMachines?.find((m) => m.name === name);
    if (hit?.stateMachineArn) return hit.stateMachineArn;
    token = page.nextToken;
  } while (token);
  throw new CliError(`no state machine named ${name} in this account and region`, 'deploy the stack (npx cdk deploy), check AWS_REGION, or pass --state-machine-arn');
}

/** Starts an execution and waits for it, its status on stderr. Throws when it does not succeed. */
export async function runOnAws(sfn: SFNClient, arn: string, name: string, input: unknown): Promise<Record<string, unknown>> {
  const started = await sfn.send(new StartExecutionCommand({ stateMachineArn: arn, name, input: JSON.stringify(input) }));
  const executionArn = started.executionArn ?? '';
  err(`started ${executionArn}`);
  const bar = progress('waiting', null, 'polls', {});
  let polls = 0;
  try {
    for (;;) {
      const d = await sfn.send(new DescribeExecutionCommand({ executionArn }));
      bar.update(++polls, d.status ?? '');
      if (d.status !== 'RUNNING') {
        if (d.status !== 'SUCCEEDED') throw new CliError(`execution ${d.status ?? 'ended'}: ${d.error ?? ''} ${d.cause ?? ''}`.trim(), `its history: aws stepfunctions get-execution-history --execution-arn ${executionArn}`);
        return JSON.parse(d.output ?? '{}') as Record<string, unknown>;
      }
      await sleep(5000);
    }
  } finally {
    bar.stop();
  }
}
