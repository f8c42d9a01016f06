/**
 * How the CLI writes: human lines and tables on stdout, diagnostics on stderr, progress bars on a
 * terminal only, and the one `--json` shape every command ends with (docs/operations.md, "Command
 * output"): item lines, then `{"summary":{…}}`.
 *
 *   renderTable([{ header: 'table' }, { header: 'applied', align: 'right' }], [['public.orders', '51']])
 *     table          applied
 *     -------------  -------
 *     public.orders       51
 *   humanDuration(245_052)   → "4m05s"
 *   const bar = progress('apply', 3000, 'records'); bar.update(500, 'applied=480'); bar.stop();
 */
import { Presets, SingleBar } from 'cli-progress';

export const out = (line = ''): void => {
  process.stdout.write(`${line}\n`);
};
export const err = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

/** Terminal width for tables and long lines: never above 100 columns, as the contract says. */
export const WIDTH = 100;

/** The last line of every `--json` output: `{"summary":{…}}`, plus any deprecated top-level fields. */
export function summaryLine(summary: Record<string, unknown>, legacy: Record<string, unknown> = {}): string {
  return JSON.stringify({ summary, ...legacy });
}

/** `text` cut to `max` characters, with an ellipsis when cut. */
export function clip(text: string, max: number): string {
  if (max <= 0) return '';
  return text.length <= max ? text : `${text.slice(0, Math.max(0, max - 1))}…`;
}

/** A duration for people: `850ms`, `7.2s`, `45s`, `4m05s`, `3h02m`, `2d04h`. */
export function humanDuration(ms: number): string {
  if (!Number.isFinite(ms)) return '-';
  const sign = ms < 0 ? '-' : '';
  const a = Math.abs(ms);
  const pad = (n: number) => String(n).padStart(2, '0');
  if (a < 1000) return `${sign}${Math.round(a)}ms`;
  if (a < 10_000) return `${sign}${(a / 1000).toFixed(1)}s`;
  const s = Math.round(a / 1000);
  if (s < 60) return `${sign}${s}s`;
  if (s < 3600) return `${sign}${Math.floor(s / 60)}m${pad(s % 60)}s`;
  if (s < 86_400) return `${sign}${Math.floor(s / 3600)}h${pad(Math.floor((s % 3600) / 60))}m`;
  return `${sign}${Math.floor(s / 86_400)}d${pad(Math.floor((s % 86_400) / 3600))}h`;
}

/** An ISO time without milliseconds: `2026-11-30T06:00:00Z`. */
export const isoSeconds = (ms: number): string => `${new Date(ms).toISOString().slice(0, 19)}Z`;

export interface Column {
  readonly header: string;
  readonly align?: 'left' | 'right';
  /** May be cut (with an ellipsis) when the table is wider than the terminal. @default false */
  readonly flex?: boolean;
}

/** Column widths: the widest cell, the flexible columns cut (widest first) until the table fits. */
function widthsOf(columns: readonly Column[], rows: readonly (readonly string[])[], width: number): number[] {
  const widths = columns.map((c, i) => Math.max(c.header.length, ...rows.map((r) => (r[i] ?? '').length)));
  const total = () => widths.reduce((a, b) => a + b, 0) + 2 * (widths.length - 1);
  while (total() > width) {
    let widest = -1;
    columns.forEach((c, i) => {
      if (c.flex && (widths[i] ?? 0) > Math.max(8, c.header.length) && (widest < 0 || (widths[i] ?? 0) > (widths[widest] ?? 0))) widest = i;
    });
    if (widest < 0) break;
    widths[widest] = Math.max(8, (widths[widest] ?? 0) - (total() - width));
  }
  return widths;
}

/** An aligned text table (header, rule, rows) at most `width` columns wide; flexible cells are cut. */
export function renderTable(columns: readonly Column[], rows: readonly (readonly string[])[], width = WIDTH): string {
  const widths = widthsOf(columns, rows, width);
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => {
        const w = widths[i] ?? 0;
        const text = clip(cell, w);
        return columns[i]?.align === 'right' ? text.padStart(w) : text.padEnd(w);
      })
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.header)), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** A progress bar on stderr with counts and rate; a no-op when stderr is not a terminal or under --json. */
export interface Progress {
  update(done: number, detail?: string): void;
  setTotal(total: number): void;
  stop(): void;
}

const NO_PROGRESS: Progress = { update: () => {}, setTotal: () => {}, stop: () => {} };

/**
 * Starts a bar such as `apply [█████░░░░░] 1500/3000 records · 812/s applied=1480`; with a total of
 * null (a stream with no end), a counter: `run 1500 records · 812/s applied=1480`.
 */
export function progress(label: string, total: number | null, unit: string, options: { readonly quiet?: boolean } = {}): Progress {
  if (options.quiet || !process.stderr.isTTY) return NO_PROGRESS;
  const format = total === null ? `${label} {value} ${unit} · {rate}/s {detail}` : `${label} [{bar}] {value}/{total} ${unit} · {rate}/s {detail}`;
  const bar = new SingleBar({ format, stream: process.stderr, hideCursor: true, clearOnComplete: false, barsize: 24 }, Presets.shades_classic);
  const started = Date.now();
  bar.start(total ?? 0, 0, { rate: '0', detail: '' });
  let stopped = false;
  return {
    update(done, detail = '') {
      if (stopped) return;
      const seconds = (Date.now() - started) / 1000;
      const rate = seconds > 0 ? Math.round(done / seconds) : 0;
      bar.update(done, { rate: rate.toLocaleString('en-US'), detail: clip(detail, 40) });
    },
    setTotal(n) {
      if (!stopped) bar.setTotal(n);
    },
    stop() {
      if (stopped) return;
      stopped = true;
      bar.stop();
    },
  };
}
