/** Types of sdk-schema-keys.mjs (plain JavaScript, run by the bundling child process). */
export declare const SDK_SCHEMA_FILE: RegExp;
export declare function isSdkSchemaFile(file: string): boolean;
export declare function stringConstants(source: string): Map<string, string>;
export declare function inlineSchemaKeys(source: string): { code: string; inlined: number };
export declare function sdkSchemaKeysPlugin(): {
  name: string;
  setup(build: { onLoad(options: { filter: RegExp }, callback: (args: { path: string }) => Promise<{ contents: string; loader: 'js' }>): void }): void;
};
