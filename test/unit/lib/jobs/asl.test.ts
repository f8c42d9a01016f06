/**
 * The jobs' ASL blocks (lib/jobs/asl.ts): a query loop and a Distributed Map assembled into a
 * definition validate with asl-validator, the loop carries only an index and a count (never the
 * queries), runs each query on Athena in the jobs' workgroup, and stops retrying on a request error.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ATHENA_WORKGROUP, distributedMap, failState, lambdaTask, NON_RETRYABLE_ERRORS, QUERY_AT_FUNCTION, queryLoop, substitution } from '../../../../lib/jobs/asl.js';
import { validateAsl } from '../../../helpers/asl.js';

/** Definition substitutions replaced by ARNs of the right shape, as CDK renders them. */
const rendered = (definition: unknown): unknown =>
  JSON.parse(
    JSON.stringify(definition)
      .replaceAll(substitution(QUERY_AT_FUNCTION), 'arn:aws:lambda:us-east-1:123456789012:function:shop-job-query-at')
      .replaceAll(substitution('PlanFunction'), 'arn:aws:lambda:us-east-1:123456789012:function:shop-job-plan')
      .replaceAll(substitution('ItemFunction'), 'arn:aws:lambda:us-east-1:123456789012:function:shop-job-item')
      .replaceAll(substitution(ATHENA_WORKGROUP), 'shop-jobs'),
  );

function definition(kind: 'json' | 'jsonl' | 'list') {
  return {
    StartAt: 'Plan',
    States: {
      Plan: lambdaTask('PlanFunction', 60, { ResultPath: '$.plan', Next: 'QueriesStart' }),
      ...queryLoop({ from: '$.plan.queries', name: 'Queries', next: 'Items', onError: 'Failed', timeoutSeconds: 60 }),
      Items: distributedMap({
        items: { bucketPath: '$.plan.bucket', keyPath: '$.plan.itemsKey', kind },
        itemSelector: { 'item.$': '$$.Map.Item.Value' },
        processor: { StartAt: 'Item', States: { Item: lambdaTask('ItemFunction', 300, { End: true }) } },
        maxConcurrency: 8,
        label: 'Items',
        next: 'Done',
        onError: 'Failed',
      }),
      Done: { Type: 'Succeed' },
      Failed: failState(),
    },
  };
}

describe('job ASL blocks', () => {
  for (const kind of ['json', 'jsonl', 'list'] as const) {
    it(`a plan, a query loop and a Distributed Map reading ${kind} items validate`, () => {
      assert.deepEqual(validateAsl(rendered(definition(kind))), []);
    });
  }

  it('the query loop holds an index and a count, fetches one query at a time and runs it on Athena', () => {
    const states = queryLoop({ from: '$.plan.queries', name: 'Q', next: 'After', onError: 'Failed', timeoutSeconds: 30 });
    assert.deepEqual(Object.keys(states), ['QStart', 'QAny', 'QFetch', 'QRun', 'QAdvance', 'QMore']);
    assert.deepEqual(states.QStart?.Parameters, { index: 0, 'count.$': '$.plan.queries.count' });
    assert.equal((states.QAny?.Default as string) ?? '', 'After', 'no queries: straight on');
    assert.deepEqual(states.QFetch?.Parameters, { 'queriesKey.$': '$.plan.queries.queriesKey', 'index.$': '$.Q.index', 'count.$': '$.Q.count' });
    assert.equal(states.QRun?.Resource, 'arn:aws:states:::athena:startQueryExecution.sync');
    assert.deepEqual(states.QRun?.Parameters, { 'QueryString.$': '$.QQuery.query.athena.QueryString', WorkGroup: substitution(ATHENA_WORKGROUP) });
    assert.equal(states.QRun?.ResultPath, null, 'the query result stays out of the state');
  });

  it('never retries a request error; retries Lambda service errors with jitter', () => {
    const retry = lambdaTask('PlanFunction', 60, { End: true }).Retry as { ErrorEquals: string[]; MaxAttempts: number; JitterStrategy?: string }[];
    assert.deepEqual(retry[0], { ErrorEquals: [...NON_RETRYABLE_ERRORS], MaxAttempts: 0 });
    assert.ok(retry.some((r) => r.ErrorEquals.includes('Lambda.TooManyRequestsException') && r.JitterStrategy === 'FULL'));
  });

  it('reads the items from S3 with an ItemReader, never inline', () => {
    const json = distributedMap({ items: { bucketPath: '$.b', keyPath: '$.k', kind: 'jsonl' }, itemSelector: {}, processor: { StartAt: 'X', States: {} }, maxConcurrency: 4, label: 'L', next: 'N', onError: 'F' });
    assert.deepEqual(json.ItemReader, { Resource: 'arn:aws:states:::s3:getObject', ReaderConfig: { InputType: 'JSONL' }, Parameters: { 'Bucket.$': '$.b', 'Key.$': '$.k' } });
    assert.equal(json.ItemsPath, undefined);
    const list = distributedMap({ items: { bucketPath: '$.b', keyPath: '$.p', kind: 'list' }, itemSelector: {}, processor: { StartAt: 'X', States: {} }, maxConcurrency: 4, label: 'L', next: 'N', onError: 'F' });
    assert.equal((list.ItemReader as { Resource: string }).Resource, 'arn:aws:states:::s3:listObjectsV2');
    assert.deepEqual((list.ItemProcessor as { ProcessorConfig: unknown }).ProcessorConfig, { Mode: 'DISTRIBUTED', ExecutionType: 'STANDARD' });
  });
});
