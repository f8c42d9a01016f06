/** Number formatting for the scale bench's tables: counts, bytes and dollars, short and aligned. */

const SI = [
  [1e12, 'T'],
  [1e9, 'B'],
  [1e6, 'M'],
  [1e3, 'k'],
] as const;

/** 2,880,000 → "2.88 M"; 333 → "333". */
export function count(n: number): string {
  // From 0.9995 of a unit up, so that 999,900 reads "1.00 M", not "1.00e+3 k".
  for (const [size, unit] of SI) if (Math.abs(n) >= size * 0.9995) return `${(n / size).toPrecision(3)} ${unit}`;
  return Number.isInteger(n) ? String(n) : n.toPrecision(3);
}

/** Bytes in binary units: "2.19 TiB". */
export function bytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  let v = n;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${Math.round(v)} B` : `${v.toPrecision(3)} ${units[i]}`;
}

/** Dollars with three significant digits, thousands separated: "$13,700", "$14.4", "$0.0031". */
export function money(n: number): string {
  if (n === 0) return '$0';
  if (Math.abs(n) >= 1000) return `$${Math.round(n).toLocaleString('en-US')}`;
  return `$${n.toPrecision(3)}`;
}

/** One fixed-width row: the first cell left-aligned, the rest right-aligned. */
export function row(cells: readonly string[], widths: readonly number[]): string {
  return cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 10) : c.padStart(widths[i] ?? 10))).join(' ');
}

export const passFail = (ok: boolean): string => (ok ? 'PASS' : 'FAIL');
