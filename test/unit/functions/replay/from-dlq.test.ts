/**
 * The AWS-facing edges with mocked clients: the on-failure SQS queue (messages deleted only once
 * their batch replayed cleanly), S3 on-failure objects, and starting the deployed state machine.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DeleteMessageCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DescribeExecutionCommand, ListStateMachinesCommand, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { mockClient } from 'aws-sdk-client-mock';
import { runOnAws, stateMachineArnByName } from '../../../../bin/cli/replay.js';
import type { DlqProblem } from '../../../../functions/replay/dlq.js';
import { readOnFailureObjects, readQueue } from '../../../../functions/replay/from-dlq.js';
import { fakeS3 } from '../../../helpers/fake-s3.js';

const range = {
  version: '1.0',
  KinesisBatchInfo: { shardId: 'shardId-000000000001', startSequenceNumber: '10', endSequenceNumber: '20', approximateArrivalOfFirstRecord: '2026-11-30T06:00:00.000Z', approximateArrivalOfLastRecord: '2026-11-30T06:00:01.000Z', batchSize: 3, streamArn: 'arn:aws:kinesis:us-east-1:1:stream/s' },
};

describe('on-failure sources and the deployed state machine', () => {
  it('reads every queue message once, names unreadable ones, and deletes a message only when acknowledged', async () => {
    const sqs = new SQSClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
    const mock = mockClient(sqs);
    mock
      .on(ReceiveMessageCommand)
      .resolvesOnce({ Messages: [{ MessageId: 'a', ReceiptHandle: 'ra', Body: JSON.stringify(range) }, { MessageId: 'b', ReceiptHandle: 'rb', Body: 'oops' }] })
      .resolvesOnce({ Messages: [{ MessageId: 'a', ReceiptHandle: 'ra2', Body: JSON.stringify(range) }] })
      .resolves({ Messages: [] });
    mock.on(DeleteMessageCommand).resolves({});
    const problems: DlqProblem[] = [];
    const items = await readQueue(sqs, 'https://q', problems);
    assert.equal(items.length, 1);
    assert.equal(items[0]?.batch.kind, 'range');
    assert.deepEqual(problems, [{ source: 'sqs:b', detail: 'message body is not JSON' }]);
    assert.equal(mock.commandCalls(DeleteMessageCommand).length, 0, 'reading deletes nothing');
    await items[0]?.ack?.();
    assert.deepEqual(mock.commandCalls(DeleteMessageCommand)[0]?.args[0].input, { QueueUrl: 'https://q', ReceiptHandle: 'ra' });
    mock.restore();
  });

  it('reads S3 on-failure objects (one invocation record each)', async () => {
    const s3 = fakeS3();
    s3.put('aws/lambda/uuid/shardId-000000000001/2026/11/30/x', JSON.stringify(range));
    s3.put('aws/lambda/uuid/shardId-000000000001/2026/11/30/y', '{');
    const problems: DlqProblem[] = [];
    const items = await readOnFailureObjects(s3.client, 'b', 'aws/lambda/', problems);
    assert.equal(items.length, 1);
    assert.equal(problems.length, 1);
    s3.restore();
  });

  it('finds the state machine by name and waits for the execution', async () => {
    const sfn = new SFNClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
    const mock = mockClient(sfn);
    mock
      .on(ListStateMachinesCommand)
      .resolvesOnce({ stateMachines: [{ name: 'other', stateMachineArn: 'arn:o', type: 'STANDARD', creationDate: new Date() }], nextToken: 't' })
      .resolves({ stateMachines: [{ name: 'shop-replay', stateMachineArn: 'arn:sm', type: 'STANDARD', creationDate: new Date() }] });
    mock.on(StartExecutionCommand).resolves({ executionArn: 'arn:ex', startDate: new Date() });
    mock.on(DescribeExecutionCommand).resolves({ status: 'SUCCEEDED', output: JSON.stringify({ summary: { tally: { applied: 3 } } }), executionArn: 'arn:ex', stateMachineArn: 'arn:sm', startDate: new Date() });
    assert.equal(await stateMachineArnByName(sfn, 'shop-replay'), 'arn:sm');
    const out = await runOnAws(sfn, 'arn:sm', 'run-1', { runId: 'run-1' });
    assert.deepEqual(out, { summary: { tally: { applied: 3 } } });
    assert.equal(mock.commandCalls(StartExecutionCommand)[0]?.args[0].input.name, 'run-1');
    mock.on(DescribeExecutionCommand).resolves({ status: 'FAILED', error: 'ReplayIncomplete', cause: 'c', executionArn: 'arn:ex', stateMachineArn: 'arn:sm', startDate: new Date() });
    await assert.rejects(runOnAws(sfn, 'arn:sm', 'run-2', {}), /FAILED: ReplayIncomplete/);
    mock.restore();
  });
});
