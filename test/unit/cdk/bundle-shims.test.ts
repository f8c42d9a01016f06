/**
 * The stand-ins of lib/bundle-shims/ and the partitions trim of lib/bundler/plugins.mjs, one by one:
 * what runs at construction behaves as the original (the same middleware options, so `lean` still
 * removes them; the same partition lookups), and what must never run fails with a message naming
 * the bundle. test/unit/cdk/bundle.test.ts runs them all together in the shipped bundle over HTTP.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, it } from 'node:test';
import { getUserAgentMiddlewareOptions, getUserAgentPlugin, loggerMiddlewareOptions } from '@aws-sdk/core/client';
import { SignatureV4MultiRegion as OriginalMultiRegion } from '@aws-sdk/signature-v4-multi-region';
import { Sha256 } from '@smithy/core/checksum';
import { constructStack } from '@smithy/core/client';
import { HttpRequest } from '@smithy/core/protocols';
import { SDK_PARTITIONS_FILE, trimPartitionDescriptions } from '../../../lib/bundler/plugins.mjs';
import * as leanRemoved from '../../../lib/bundle-shims/lean-removed-middleware.js';
import { getInstanceMetadataRegion } from '../../../lib/bundle-shims/no-imds-region.js';
import { HeaderFormatter } from '../../../lib/bundle-shims/no-event-signing.js';
import { S3ExpressIdentityProviderImpl } from '../../../lib/bundle-shims/no-s3-express.js';
import { SignatureV4MultiRegion } from '../../../lib/bundle-shims/no-sigv4a.js';
import { createBufferedReadable, getAwsChunkedEncodingStream } from '../../../lib/bundle-shims/no-streaming-checksums.js';
import { Crc32cJs, Crc64NvmeJs } from '../../../lib/bundle-shims/no-unused-crcs.js';
import { createChecksumStream, sdkStreamMixin } from '../../../lib/bundle-shims/no-web-streams.js';
import { XmlShapeSerializer } from '../../../lib/bundle-shims/no-xml-serializer.js';
import { Crc32Js } from '../../../lib/bundle-shims/no-js-hashes.js';
import { PACKAGE_ROOT } from '../../../lib/defaults.js';

const BUNDLE = /Lambda bundle carries no/;
const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', sessionToken: 'token' };
const s3Request = () =>
  new HttpRequest({ method: 'PUT', protocol: 'https:', hostname: 'raw-bucket.s3.eu-west-2.amazonaws.com', path: '/raw/table=a/b.jsonl.gz', headers: { host: 'raw-bucket.s3.eu-west-2.amazonaws.com', 'content-type': 'application/x-ndjson' }, body: 'x' });

describe('the middleware lean removes', () => {
  it('is added under the very options of the SDK, so lean finds it', () => {
    assert.deepEqual(leanRemoved.getUserAgentMiddlewareOptions, getUserAgentMiddlewareOptions);
    assert.deepEqual(leanRemoved.loggerMiddlewareOptions, loggerMiddlewareOptions);
    for (const [plugin, name] of [
      [leanRemoved.getUserAgentPlugin({}), 'getUserAgentMiddleware'],
      [leanRemoved.getLoggerPlugin({}), 'loggerMiddleware'],
    ] as const) {
      const stack = constructStack();
      plugin.applyToStack(stack as never);
      assert.deepEqual(stack.identify(), stack.identify().filter((m) => m.startsWith(name)), name);
      assert.equal(stack.remove(name), true, `${name} is removable by name`);
    }
    // The real plugin lands in the same place (step, priority) as the stand-in.
    const real = constructStack();
    getUserAgentPlugin({} as never).applyToStack(real as never);
    const lean = constructStack();
    leanRemoved.getUserAgentPlugin({}).applyToStack(lean as never);
    assert.deepEqual(lean.identify(), real.identify());
  });

  it('fails loudly if a client ever keeps it', async () => {
    await assert.rejects(leanRemoved.userAgentMiddleware({})(), BUNDLE);
    await assert.rejects(leanRemoved.loggerMiddleware()(), BUNDLE);
  });
});

describe('the stand-ins of code the Lambda never runs', () => {
  it('construct as the originals where the SDK builds them at client construction', () => {
    const serializer = new XmlShapeSerializer({ xmlNamespace: 'ns' });
    serializer.setSerdeContext({ base64Encoder: 'x' });
    assert.deepEqual(serializer.serdeContext, { base64Encoder: 'x' });
    const provider = new S3ExpressIdentityProviderImpl(async () => ({}));
    assert.equal(typeof provider.createSessionFn, 'function');
    assert.ok(new HeaderFormatter());
  });

  it('the multi-region signer signs and presigns every other request exactly as SigV4 does', async () => {
    const options = { credentials, region: 'eu-west-2', service: 's3', sha256: Sha256, uriEscapePath: false };
    const signingDate = new Date('2026-01-02T03:04:05Z');
    const shim = new SignatureV4MultiRegion(options);
    const real = new OriginalMultiRegion(options);
    for (const opts of [{ signingDate }, { signingDate, signingRegion: 'us-west-2', signingService: 's3' }]) {
      assert.deepEqual(await shim.sign(s3Request() as never, opts as never), await real.sign(s3Request(), opts));
      assert.deepEqual(await shim.presign(s3Request() as never, { ...opts, expiresIn: 300 } as never), await real.presign(s3Request(), { ...opts, expiresIn: 300 }));
    }
  });

  it('fail with a message naming the bundle when reached', async () => {
    for (const reach of [
      () => new XmlShapeSerializer({}).write(),
      () => new XmlShapeSerializer({}).flush(),
      () => new HeaderFormatter().format(),
      () => new Crc32Js(),
      () => new Crc32cJs(),
      () => new Crc64NvmeJs(),
      () => sdkStreamMixin(new ReadableStream()),
      () => createChecksumStream({}),
      () => getAwsChunkedEncodingStream(new ReadableStream(), {}),
      () => createBufferedReadable(new ReadableStream(), 8192),
    ]) {
      assert.throws(reach, BUNDLE, String(reach));
    }
    await assert.rejects(new S3ExpressIdentityProviderImpl(undefined).getS3ExpressIdentity(), BUNDLE);
    const multiRegion = new SignatureV4MultiRegion({ credentials, region: 'us-east-1', service: 's3', sha256: Sha256 });
    await assert.rejects(multiRegion.sign(s3Request() as never, { signingRegion: '*' } as never), /Lambda bundle carries no SigV4a/);
    await assert.rejects(multiRegion.presign(s3Request() as never, { signingRegion: '*' } as never), /Lambda bundle carries no SigV4a/);
    await assert.rejects(getInstanceMetadataRegion(), /Region is missing.*Lambda bundle carries no/);
  });
});

describe('the partitions table without region descriptions', () => {
  const file = createRequire(path.join(PACKAGE_ROOT, 'package.json')).resolve('@aws-sdk/core/client').replace(/dist-cjs.*$/, 'dist-es/submodules/client/util-endpoints/lib/aws/partitions.js');
  const source = readFileSync(file, 'utf8');
  const original = JSON.parse(source.replace(/^export const partitionsInfo = /, '').replace(/;\s*$/, '')) as {
    partitions: { id: string; regions: Record<string, Record<string, unknown>> }[];
  };

  it('is matched by the plugin, and keeps every partition, output and region key', () => {
    assert.ok(SDK_PARTITIONS_FILE.test(file), file);
    const { code, trimmed } = trimPartitionDescriptions(source);
    const regions = original.partitions.reduce((n, p) => n + Object.keys(p.regions).length, 0);
    assert.equal(trimmed, regions, 'every region had a description, and only that');
    const expected = structuredClone(original);
    for (const p of expected.partitions) for (const r of Object.values(p.regions)) delete r.description;
    assert.deepEqual(JSON.parse(code.replace(/^export const partitionsInfo = /, '').replace(/;\s*$/, '')), expected);
    assert.ok(code.length < source.length - 1500, `${source.length} -> ${code.length}`);
  });

  it('leaves a module of another shape untouched', () => {
    for (const other of ['export const partitionsInfo = {"a": 1', 'export default {};', `${source}\nexport const x = 1;`]) {
      assert.deepEqual(trimPartitionDescriptions(other), { code: other, trimmed: 0 });
    }
  });

  it('loses nothing an endpoint rule reads: no installed client\'s rules name a description', () => {
    const sdk = path.join(PACKAGE_ROOT, 'node_modules', '@aws-sdk');
    const clients = readdirSync(sdk).filter((d) => d.startsWith('client-'));
    assert.ok(clients.includes('client-s3') && clients.includes('client-dynamodb'), clients.join(', '));
    for (const client of clients) {
      const dir = path.join(sdk, client, 'dist-es', 'endpoint');
      for (const f of readdirSync(dir)) assert.doesNotMatch(readFileSync(path.join(dir, f), 'utf8'), /description/, `${client}/${f}`);
    }
  });
});
