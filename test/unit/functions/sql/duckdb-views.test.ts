/**
 * The views and tables the embedded engine creates (functions/sql/duckdb-views.ts): the Glue
 * tables' names and columns over local copies, empty when no object is in the range read.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { emptyTable, emptyView, jsonView, loadedTable, parquetView } from '../../../../functions/sql/duckdb-views.js';
import { EXPECTED_STATE, RAW_LINES } from '../../../../functions/sql/schemas.js';

describe('DuckDB views of the Glue tables', () => {
  it('an Iceberg table over Parquet files: every column cast to its type; no files is an empty view', () => {
    const view = parquetView(EXPECTED_STATE, '/tmp/x/src/expected_state/**/*.parquet');
    assert.match(view, /^CREATE OR REPLACE VIEW "expected_state" AS SELECT CAST\("/);
    assert.ok(view.includes("read_parquet('/tmp/x/src/expected_state/**/*.parquet', hive_partitioning = false, union_by_name = true)"));
    for (const c of EXPECTED_STATE.columns) assert.ok(view.includes(`AS "${c.name}"`), c.name);
    assert.equal(parquetView(EXPECTED_STATE, null), emptyView(EXPECTED_STATE));
    assert.match(emptyView(EXPECTED_STATE), / WHERE FALSE$/);
  });

  it('a table loaded for a rewrite, and an empty one to stage an INSERT into, under any name', () => {
    const loaded = loadedTable(EXPECTED_STATE, '/tmp/x/load/**/*.parquet');
    assert.match(loaded, /^CREATE OR REPLACE TABLE "expected_state" AS SELECT /);
    assert.ok(loaded.includes("read_parquet('/tmp/x/load/**/*.parquet'"));
    assert.match(emptyTable(EXPECTED_STATE, 'staged"name'), /^CREATE OR REPLACE TABLE "staged""name" \(/);
  });

  it('a JSON source maps each column from its field, partitions and "$path" from the object path; none is an empty view with "$path"', () => {
    const view = jsonView(RAW_LINES, { files: '/tmp/x/raw/**/*', localRoot: '/tmp/x/raw/', uriRoot: 's3://b/' });
    assert.ok(view.includes("'s3://b/' || substr(filename, 12)"));
    assert.ok(view.includes('AS "$path"'));
    assert.ok(view.includes("format = 'newline_delimited'"));
    const none = jsonView(RAW_LINES, { files: null, localRoot: '/tmp/x/raw/', uriRoot: 's3://b/' });
    assert.equal(none, emptyView(RAW_LINES, ['$path']));
  });
});
