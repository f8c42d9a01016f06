/**
 * Commit-to-apply lag per table and hour as a fixed histogram, so that `tidemark status` can give
 * p50 and p99 over the last hour from the status table alone (CloudWatch's FreshnessLagMs gives the
 * exact percentiles). Each batch ADDs its applied keys' lags, bucket by bucket, in its one status
 * write (`h_lag<i>` in the open hour; a closed hour row keeps them as `lag<i>`). A percentile is
 * read as the upper bound of the bucket it falls in: "p99 ≤ 30 s".
 */

/** Upper bounds of the buckets, ms; the last bucket holds everything above the last bound. */
export const LAG_BOUNDS_MS = [1_000, 2_000, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000, 600_000, 1_800_000, 3_600_000, 21_600_000, 86_400_000] as const;

/** Buckets: one per bound, and one above them. */
export const LAG_BUCKETS = LAG_BOUNDS_MS.length + 1;

/** The attribute of bucket `i`: `lag3`, or `h_lag3` with the open hour's prefix. */
export const lagAttribute = (i: number, prefix = ''): string => `${prefix}lag${i}`;

/** The bucket of one lag. */
export function bucketOf(lagMs: number): number {
  for (let i = 0; i < LAG_BOUNDS_MS.length; i++) if (lagMs <= (LAG_BOUNDS_MS[i] as number)) return i;
  return LAG_BOUNDS_MS.length;
}

/** Counts per bucket of some lags. */
export function lagHistogram(lags: readonly number[]): number[] {
  const counts = new Array<number>(LAG_BUCKETS).fill(0);
  for (const l of lags) counts[bucketOf(l)] = (counts[bucketOf(l)] ?? 0) + 1;
  return counts;
}

/** Adds histograms. */
export function addHistograms(a: readonly number[], b: readonly number[]): number[] {
  return Array.from({ length: LAG_BUCKETS }, (_, i) => (a[i] ?? 0) + (b[i] ?? 0));
}

/** A row's histogram, from `lag<i>` (or `<prefix>lag<i>`) attributes. */
export function histogramOf(row: Readonly<Record<string, unknown>> | undefined, prefix = ''): number[] {
  return Array.from({ length: LAG_BUCKETS }, (_, i) => {
    const v = Number(row?.[lagAttribute(i, prefix)] ?? 0);
    return Number.isFinite(v) && v > 0 ? v : 0;
  });
}

/**
 * The upper bound (ms) of the bucket holding quantile `q` (0 < q ≤ 1); Infinity for the open-ended
 * bucket; undefined when the histogram is empty.
 */
export function quantileBound(counts: readonly number[], q: number): number | undefined {
  const total = counts.reduce((n, c) => n + c, 0);
  if (total === 0) return undefined;
  const rank = Math.ceil(q * total);
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    seen += counts[i] ?? 0;
    if (seen >= rank) return i < LAG_BOUNDS_MS.length ? (LAG_BOUNDS_MS[i] as number) : Number.POSITIVE_INFINITY;
  }
  return Number.POSITIVE_INFINITY;
}
