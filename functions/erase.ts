/**
 * The erase job's Lambda entry (`index.handler`): every step of the erase state machine
 * (`functions/erase/handler.ts`). Bundled by `handlerCode({ name: 'erase' })`, and prebuilt by
 * `npm pack` for the installed package.
 */
export { handler } from './erase/handler.js';
