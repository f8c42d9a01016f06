/**
 * The replay job's Lambda entry (`index.handler`): every step of the replay state machine
 * (`functions/replay/handler.ts`). Bundled by `handlerCode({ name: 'replay' })`, and prebuilt by
 * `npm pack` for the installed package.
 */
export { handler } from './replay/handler.js';
