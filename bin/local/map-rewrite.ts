/**
 * Distributed Map `ItemReader` and `ItemBatcher`, run locally by rewriting the Map into states the
 * engine (aws-local-stepfunctions) runs: it has no item reader, but it runs a Map over `ItemsPath`.
 * So a Map
 *
 *   "Work": { "Type": "Map", "ItemReader": {…}, "ItemBatcher": {…}, "ResultPath": "$.work", "Next": "Report", "Catch": [{ …, "Next": "Failed" }] }
 *
 * becomes three kinds of states in the same scope (every transition to "Work" now goes to the first):
 *
 *   "Work (items)"            Task: reads the items from S3 (and batches them) into `$.__tidemarkItems`
 *                             (ResultPath, so the rest of the input is unchanged), with the Map's
 *                             InputPath, Retry and Catch; an S3 failure is `States.ItemReaderFailed`
 *   "Work"                    the Map, `ItemsPath: "$.__tidemarkItems"`, ItemReader/ItemBatcher removed
 *   "Work (output)"           Task: the Map's output without `__tidemarkItems`, then "Report" (or End)
 *   "Work (caught → Failed)"  the same for each Catch target
 *
 * so the Map's ResultSelector/ResultPath/OutputPath, Next and Catch give what they give on AWS.
 * `ItemSelector` sees the same `$$.Map.Item.Value`/`Index`; its `$` paths read the Map's effective
 * input, which holds the hidden items too: an ItemSelector that takes the whole input (`"x.$": "$"`)
 * is refused rather than leak them. What the generated tasks do, and what AWS documents they
 * mirror, is in map-item-reader.ts. Refused here with a message naming the state: CSV, PARQUET and
 * manifest inputs, `ItemsPointer`, `Transformation`, `ItemSelector` together with `ItemBatcher`
 * (AWS applies it to each item before batching; put per-batch values in `BatchInput`), an InputPath
 * that is not a plain reference path. The Map's input must be a JSON object (the items need a place
 * in it), else the item-reading task fails with `States.ResultPathMatchFailure`.
 */
import type { MapItemsPlan } from './map-item-reader.js';
import { ITEMS_KEY } from './map-item-reader.js';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export const S3_LIST_OBJECTS = 'arn:aws:states:::s3:listObjectsV2';
export const S3_GET_OBJECT = 'arn:aws:states:::s3:getObject';
/**
 * The generated tasks' TimeoutSeconds: the Map itself has none. Not AWS's 99999999, which the
 * engine would pass to setTimeout beyond its 2^31 - 1 ms, where Node fires it after 1 ms.
 */
const LONG_TIMEOUT_SECONDS = 2_000_000;

/** A generated state's local behaviour: read a Map's items, or strip them from its output. */
export type MapTask = { readonly kind: 'map-items'; readonly map: string; readonly plan: MapItemsPlan } | { readonly kind: 'map-output'; readonly map: string };

const READER_CONFIG_KEYS = new Set(['InputType', 'MaxItems', 'MaxItemsPath']);
const PARAMETER_KEYS: Readonly<Record<'listObjectsV2' | 'getObject', readonly string[]>> = {
  listObjectsV2: ['Bucket', 'Prefix'],
  getObject: ['Bucket', 'Key', 'VersionId', 'ExpectedBucketOwner'],
};
const BATCHER_KEYS = new Set(['MaxItemsPerBatch', 'MaxItemsPerBatchPath', 'MaxInputBytesPerBatch', 'MaxInputBytesPerBatchPath', 'BatchInput']);
/** A JSONPath reference path (no wildcards, filters or slices): the items' place is appended to it. */
const REFERENCE_PATH = /^\$((\.[A-Za-z_$][\w$-]*)|(\[\d+\])|(\['[^']*'\]))*$/;
/** The whole input as a path (`$`, alone or as an intrinsic function's argument), not `$.x` nor `$$`. */
const WHOLE_INPUT = /(^|[^$\w.'])\$(?![.[$\w])/;

/** Copies `Field`/`FieldPath` (or `Field.$`) into a task's Parameters as `Name` / `Name.$`. */
function copyValueOrPath(into: Json, name: string, value: unknown, path: unknown): void {
  if (value !== undefined) into[name] = value;
  else if (typeof path === 'string') into[`${name}.$`] = path;
}

function takesWholeInput(template: unknown): boolean {
  if (Array.isArray(template)) return template.some(takesWholeInput);
  if (!isObject(template)) return false;
  return Object.entries(template).some(([k, v]) => (k.endsWith('.$') && typeof v === 'string' ? WHOLE_INPUT.test(v) : takesWholeInput(v)));
}

type At = (what: string) => void;

/** ReaderConfig's fields: what the source reads them as. */
function checkReaderConfig(config: unknown, source: MapItemsPlan['source'] | null, at: At): MapItemsPlan['inputType'] {
  if (!isObject(config)) {
    at('ItemReader.ReaderConfig must be an object');
    return undefined;
  }
  for (const k of Object.keys(config)) {
    if (!READER_CONFIG_KEYS.has(k)) at(`ItemReader.ReaderConfig.${k} is not supported locally (${k === 'ItemsPointer' ? 'store the array itself' : 'only InputType JSON or JSONL, MaxItems, MaxItemsPath'})`);
  }
  if (source === 'listObjectsV2' && config.InputType !== undefined) at('ItemReader.ReaderConfig.InputType with s3:listObjectsV2 (reading the listed objects) is not supported locally');
  if (source !== 'getObject') return undefined;
  if (config.InputType === 'JSON' || config.InputType === 'JSONL') return config.InputType;
  at(`ItemReader.ReaderConfig.InputType ${String(config.InputType)} is not supported locally (JSON or JSONL; CSV, PARQUET and MANIFEST are not read)`);
  return undefined;
}

function checkParameters(parameters: Json, source: 'listObjectsV2' | 'getObject', at: At): void {
  for (const k of Object.keys(parameters)) if (!PARAMETER_KEYS[source].includes(k.replace(/\.\$$/, ''))) at(`ItemReader.Parameters.${k} is not supported locally with ${source}`);
}

/** The S3 source an ItemReader names, and its input type; problems through `at`. */
function checkReader(reader: unknown, map: Json, at: At): Pick<MapItemsPlan, 'source' | 'inputType'> {
  if (!isObject(reader)) {
    at('ItemReader must be an object');
    return { source: 'input' };
  }
  const source = reader.Resource === S3_LIST_OBJECTS ? 'listObjectsV2' : reader.Resource === S3_GET_OBJECT ? 'getObject' : null;
  if (!source) at(`ItemReader Resource ${String(reader.Resource)} is not supported locally (only ${S3_LIST_OBJECTS} and ${S3_GET_OBJECT})`);
  for (const k of Object.keys(reader)) if (!['Resource', 'ReaderConfig', 'Parameters'].includes(k)) at(`ItemReader.${k} is not supported locally`);
  if (map.ItemsPath !== undefined) at('ItemsPath together with ItemReader is not supported');
  if (!isObject(reader.Parameters)) at('ItemReader.Parameters must name the Bucket');
  else if (source) checkParameters(reader.Parameters, source, at);
  const inputType = checkReaderConfig(reader.ReaderConfig ?? {}, source, at);
  return { source: source ?? 'input', ...(inputType ? { inputType } : {}) };
}

function checkBatcher(batcher: unknown, map: Json, at: At): void {
  if (!isObject(batcher)) {
    at('ItemBatcher must be an object');
    return;
  }
  for (const k of Object.keys(batcher)) if (!BATCHER_KEYS.has(k)) at(`ItemBatcher.${k} is not supported locally`);
  if (['MaxItemsPerBatch', 'MaxItemsPerBatchPath', 'MaxInputBytesPerBatch', 'MaxInputBytesPerBatchPath'].every((k) => batcher[k] === undefined)) at('ItemBatcher needs MaxItemsPerBatch or MaxInputBytesPerBatch');
  if (map.ItemSelector !== undefined || map.Parameters !== undefined) at('ItemSelector together with ItemBatcher is not supported locally (put per-batch values in BatchInput)');
}

/** Checks a Map's ItemReader/ItemBatcher against what is run locally; returns the plan or adds problems. */
function planOf(name: string, map: Json, problems: string[]): MapItemsPlan | null {
  const before = problems.length;
  const at: At = (what) => problems.push(`state "${name}": ${what}`);
  const read = map.ItemReader !== undefined ? checkReader(map.ItemReader, map, at) : ({ source: 'input' } as const);
  if (map.ItemBatcher !== undefined) checkBatcher(map.ItemBatcher, map, at);
  if (takesWholeInput(map.ItemSelector ?? map.Parameters)) at(`an ItemSelector taking the whole input ("$") is not supported locally with ItemReader/ItemBatcher (the input holds the read items under ${ITEMS_KEY}): select the fields it needs`);
  const inputPath = map.InputPath;
  if (inputPath === null || (inputPath !== undefined && (typeof inputPath !== 'string' || !REFERENCE_PATH.test(inputPath)))) at('with ItemReader/ItemBatcher the InputPath must be a plain reference path locally');
  return problems.length > before ? null : { ...read, batch: map.ItemBatcher !== undefined };
}

/** The item-reading task that precedes a Map: Parameters resolved by the engine, result into the Map's input. */
function itemsTask(name: string, map: Json, plan: MapItemsPlan, resource: string): Json {
  const reader = isObject(map.ItemReader) ? map.ItemReader : {};
  const config = isObject(reader.ReaderConfig) ? reader.ReaderConfig : {};
  const batcher = isObject(map.ItemBatcher) ? map.ItemBatcher : {};
  const parameters: Json = {};
  if (plan.source === 'input') parameters['Items.$'] = typeof map.ItemsPath === 'string' ? map.ItemsPath : '$';
  else parameters.Reader = reader.Parameters;
  copyValueOrPath(parameters, 'MaxItems', config.MaxItems, config.MaxItemsPath);
  copyValueOrPath(parameters, 'MaxItemsPerBatch', batcher.MaxItemsPerBatch, batcher.MaxItemsPerBatchPath);
  copyValueOrPath(parameters, 'MaxInputBytesPerBatch', batcher.MaxInputBytesPerBatch, batcher.MaxInputBytesPerBatchPath);
  if (batcher.BatchInput !== undefined) parameters.BatchInput = batcher.BatchInput;
  const inputPath = typeof map.InputPath === 'string' ? map.InputPath : '$';
  return {
    Type: 'Task',
    Resource: resource,
    ...(map.InputPath !== undefined ? { InputPath: map.InputPath } : {}),
    Parameters: parameters,
    ResultPath: `${inputPath === '$' ? '$' : inputPath}.${ITEMS_KEY}`,
    TimeoutSeconds: LONG_TIMEOUT_SECONDS,
    ...(map.Retry !== undefined ? { Retry: structuredClone(map.Retry) } : {}),
    ...(map.Catch !== undefined ? { Catch: structuredClone(map.Catch) } : {}),
    Next: name,
  };
}

/** A state's transitions (Next, Default, Choices, Catch) to `from` go to `to`. */
function retarget(state: Json, from: string, to: string): void {
  if (state.Next === from) state.Next = to;
  if (state.Default === from) state.Default = to;
  const rules = [...(Array.isArray(state.Choices) ? state.Choices : []), ...(Array.isArray(state.Catch) ? state.Catch : [])];
  for (const r of rules) if (isObject(r) && r.Next === from) r.Next = to;
}

/** Every transition of a scope (StartAt and its states') to `from` goes to `to`. */
function redirect(scope: Json, from: string, to: string): void {
  if (scope.StartAt === from) scope.StartAt = to;
  for (const state of Object.values(isObject(scope.States) ? scope.States : {})) if (isObject(state)) retarget(state, from, to);
}

/** The scopes nested in a state: a Map's processor, a Parallel's branches. */
const innerScopes = (state: Json): Json[] => [state.ItemProcessor, state.Iterator, ...(Array.isArray(state.Branches) ? state.Branches : [])].filter(isObject);

interface Rewrite {
  readonly names: Set<string>;
  readonly resource: string;
  readonly problems: string[];
  readonly tasks: Map<string, MapTask>;
}

/** A name for a generated state, unique in the definition. */
function fresh(r: Rewrite, name: string): string {
  if (r.names.has(name)) r.problems.push(`state name "${name}" is needed by the local runner: rename that state`);
  r.names.add(name);
  return name;
}

/** Puts the item-reading task before one Map and the output tasks after it (see the header). */
function rewriteMap(r: Rewrite, scope: Json, states: Json, name: string, map: Json, plan: MapItemsPlan): void {
  const reading = fresh(r, `${name} (items)`);
  const output = fresh(r, `${name} (output)`);
  redirect(scope, name, reading);
  states[reading] = itemsTask(name, map, plan, r.resource);
  r.tasks.set(reading, { kind: 'map-items', map: name, plan });
  states[output] = { Type: 'Task', Resource: r.resource, TimeoutSeconds: LONG_TIMEOUT_SECONDS, ...(map.End === true ? { End: true } : { Next: map.Next }) };
  r.tasks.set(output, { kind: 'map-output', map: name });
  delete map.End;
  map.Next = output;
  if (Array.isArray(map.Catch)) {
    map.Catch = map.Catch.map((c: unknown) => {
      if (!isObject(c) || typeof c.Next !== 'string') return c;
      const caught = `${name} (caught → ${c.Next})`;
      if (!(caught in states)) {
        states[fresh(r, caught)] = { Type: 'Task', Resource: r.resource, TimeoutSeconds: LONG_TIMEOUT_SECONDS, Next: c.Next };
        r.tasks.set(caught, { kind: 'map-output', map: name });
      }
      return { ...c, Next: caught };
    });
  }
  delete map.ItemReader;
  delete map.ItemBatcher;
  map.ItemsPath = `$.${ITEMS_KEY}`;
}

function rewriteScope(r: Rewrite, scope: Json): void {
  const states = isObject(scope.States) ? scope.States : {};
  for (const [name, state] of Object.entries(states)) {
    if (!isObject(state)) continue;
    for (const inner of innerScopes(state)) rewriteScope(r, inner);
    if (state.Type !== 'Map' || (state.ItemReader === undefined && state.ItemBatcher === undefined)) continue;
    const plan = planOf(name, state, r.problems);
    if (plan) rewriteMap(r, scope, states, name, state, plan);
  }
}

/**
 * Rewrites every Map with an ItemReader or ItemBatcher, in every scope (Map processors, Parallel
 * branches). `names` holds every state name of the definition (generated names join it; the engine
 * finds local handlers by state name, so they must be unique); `resource` is the generated tasks'
 * Resource. Returns the generated states' local behaviour by state name; problems are appended.
 */
export function localizeItemReaders(definition: Json, names: Set<string>, resource: string, problems: string[]): Map<string, MapTask> {
  const r: Rewrite = { names, resource, problems, tasks: new Map() };
  rewriteScope(r, definition);
  return r.tasks;
}
