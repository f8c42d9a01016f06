/**
 * The scheduled jobs' Lambda entry: one bundle holding every task of reconcile and snapshot
 * detection (`functions/jobs/handlers.ts`); each task function names its export as its handler
 * (`index.reconcilePlan`, `index.snapshotDetect`, ...). Bundled by `handlerCode({ name: 'jobs' })`,
 * and prebuilt by `npm pack` for the installed package.
 */
export * from './jobs/handlers.js';
