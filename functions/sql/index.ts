/**
 * The jobs' SQL (docs/history.md, "SQL"): schemas, statements, the dialect map and rendering. Pure
 * string builders: use cases render a statement for Athena (`athenaQuery` → StartQueryExecution's
 * `QueryString` and `ExecutionParameters`); the embedded engine (bin/local/duckdb-engine.ts) runs it.
 *
 *   const [s] = buildStatements('compact-hour', { hour: Date.UTC(2026, 10, 30, 6) });
 *   athenaQuery(s, 'tidemark_shop')   // { QueryString: 'INSERT INTO "tidemark_shop"."history" …', ExecutionParameters: ["'2026-11-30'", '6', …] }
 */
export * from './schemas.js';
export * from './dialect.js';
export * from './statement.js';
export * from './statements/index.js';
export { bucketOf } from './bucket.js';
export { literal, type SqlValue, SqlArgumentError } from './sql.js';
export { HOUR_MS, hourOf } from './time.js';
