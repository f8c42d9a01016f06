/**
 * Replaces `@aws-sdk/endpoint-cache` in Lambda bundles only (an esbuild alias, see handler-asset.ts):
 * the same `EndpointCache` class, with the same methods and results, over a `Map` kept in
 * least-recently-used order instead of mnemonist's typed-array LRU cache (about 7 KB with its
 * helpers). It is not a throwing stand-in because it runs: the DynamoDB client builds one at
 * construction and its endpoint-discovery middleware looks every request's key up in it, even with
 * discovery off. test/unit/cdk/endpoint-cache.test.ts drives it and the original through the same
 * random operations and compares every answer; the bundle test runs it over real DynamoDB calls.
 */

/** An endpoint as DynamoDB's DescribeEndpoints returns it. */
export interface Endpoint {
  Address: string;
  CachePeriodInMinutes: number;
}

/** A cached endpoint, with the epoch millisecond it expires at. */
export interface EndpointWithExpiry extends Pick<Endpoint, 'Address'> {
  Expires: number;
}

export class EndpointCache {
  /** Entries from least to most recently used: a `Map` iterates in insertion order. */
  private readonly cache = new Map<string, EndpointWithExpiry[]>();
  private readonly capacity: number;

  constructor(capacity: number) {
    // mnemonist's check, with its message; the SDK passes `endpointCacheSize ?? 1000`. mnemonist
    // misbehaves on a fractional or unbounded size (typed arrays of that length): refused here.
    if (typeof capacity !== 'number' || capacity <= 0) throw new Error('mnemonist/lru-cache: capacity should be positive number.');
    if (!Number.isSafeInteger(capacity)) throw new Error(`endpoint cache capacity must be a positive integer, got ${capacity}`);
    this.capacity = capacity;
  }

  /** A random live endpoint of `key`, or undefined. */
  getEndpoint(key: string): string | undefined {
    const endpointsWithExpiry = this.get(key);
    if (!endpointsWithExpiry || endpointsWithExpiry.length === 0) return undefined;
    const endpoints = endpointsWithExpiry.map((endpoint) => endpoint.Address);
    return endpoints[Math.floor(Math.random() * endpoints.length)];
  }

  /** The live endpoints of `key` (marking it most recently used), or undefined when none is left. */
  get(key: string): EndpointWithExpiry[] | undefined {
    if (!this.has(key)) return undefined;
    const value = this.touch(key);
    if (!value) return undefined;
    const now = Date.now();
    const endpointsWithExpiry = value.filter((endpoint) => now < endpoint.Expires);
    if (endpointsWithExpiry.length === 0) {
      this.delete(key);
      return undefined;
    }
    return endpointsWithExpiry;
  }

  set(key: string, endpoints: Endpoint[]): void {
    const now = Date.now();
    this.store(
      key,
      endpoints.map(({ Address, CachePeriodInMinutes }) => ({ Address, Expires: now + CachePeriodInMinutes * 60 * 1000 })),
    );
  }

  /** Empties `key`'s endpoints (the original keeps the key, with none). */
  delete(key: string): void {
    this.store(key, []);
  }

  /** Whether `key` has endpoints, expired or not; does not change the recency order. */
  has(key: string): boolean {
    const endpoints = this.cache.get(key);
    return endpoints !== undefined && endpoints.length > 0;
  }

  clear(): void {
    this.cache.clear();
  }

  /** mnemonist's `get`: the value, moved to most recently used. */
  private touch(key: string): EndpointWithExpiry[] | undefined {
    const value = this.cache.get(key);
    if (value === undefined) return undefined;
    this.cache.delete(key);
    this.cache.set(key, value);
    return value;
  }

  /** mnemonist's `set`: the value stored as most recently used, evicting the least recently used at capacity. */
  private store(key: string, value: EndpointWithExpiry[]): void {
    if (this.cache.has(key)) this.cache.delete(key);
    else if (this.cache.size >= this.capacity) {
      const oldest = this.cache.keys().next();
      if (!oldest.done) this.cache.delete(oldest.value);
    }
    this.cache.set(key, value);
  }
}
