/**
 * Replaces the AWS SDK's XML request serializer in Lambda bundles only (see `BUNDLE_REPLACEMENTS`
 * in handler-asset.ts). The S3 client's REST-XML protocol builds one at construction, but writes
 * through it only for an operation whose request body is an XML document (DeleteObjects,
 * PutBucketLifecycleConfiguration, …). The S3 operations of tidemark's functions (PutObject,
 * GetObject, HeadObject, DeleteObject, ListObjectsV2, ListObjectVersions; test/unit/cdk/bundle.test.ts
 * checks the list) put everything in the URL and headers, and PutObject's body is the raw payload,
 * so it never runs (about 6 KB with the XML builder). Responses and errors keep the real XML parser.
 * Construction and `setSerdeContext` behave as the original's; writing fails loudly.
 */

const UNAVAILABLE = 'the Lambda bundle carries no XML request serializer: tidemark sends no S3 operation with an XML request body';

export class XmlShapeSerializer {
  serdeContext: unknown;

  constructor(readonly settings: unknown) {}

  setSerdeContext(serdeContext: unknown): void {
    this.serdeContext = serdeContext;
  }

  write(): never {
    throw new Error(UNAVAILABLE);
  }

  flush(): never {
    throw new Error(UNAVAILABLE);
  }
}
